/**
 * A small offline renderer for the subset of kustomize (v5) that k8s/ uses, so the tests can
 * validate what `kubectl apply -k k8s/overlays/<env>` would send without a kustomize binary.
 * Where `kubectl kustomize` (kustomize v5) is installed, manifests.test.ts compares the two.
 *
 * Supported, with kustomize's semantics:
 *  - resources: YAML files (multi-document) and directories holding a kustomization.yaml;
 *  - namespace: set on every namespaced resource (Namespace objects are left as they are);
 *  - labels: `pairs` with `includeTemplates` (pod templates of workloads); never selectors;
 *  - configMapGenerator / secretGenerator: `literals` (KEY=VALUE), `behavior` create|merge,
 *    secret `type`, `options.disableNameSuffixHash`; names get kustomize's content hash and
 *    references to them from pod templates are rewritten;
 *  - images: name -> newName / newTag / digest in containers and initContainers;
 *  - patches: JSON 6902 patches (inline `patch` or `path`) selected by `target`
 *    (kind, name, optional group/version); ops add, remove, replace, test.
 * Transformers run in kustomize's order: patches, namespace, labels, images; hash suffixes
 * and reference fixing happen once, at the top level, as in kustomize.
 * Anything else (strategic-merge patches, namePrefix, commonLabels, replicas, files/envs
 * sources, components, ...) is rejected with an error rather than rendered approximately.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseAllDocuments } from "yaml";

export type KObject = Record<string, any>;

interface Resource {
  object: KObject;
  /** Generated ConfigMap/Secret that still needs its content-hash suffix. */
  needsHash: boolean;
}

const KUSTOMIZATION_FIELDS = new Set([
  "apiVersion",
  "kind",
  "namespace",
  "labels",
  "resources",
  "configMapGenerator",
  "secretGenerator",
  "images",
  "patches",
]);
const GENERATOR_FIELDS = new Set(["name", "behavior", "literals", "options", "type"]);
const LABEL_FIELDS = new Set(["pairs", "includeSelectors", "includeTemplates"]);
const IMAGE_FIELDS = new Set(["name", "newName", "newTag", "digest"]);
const PATCH_FIELDS = new Set(["path", "patch", "target"]);
const TARGET_FIELDS = new Set(["group", "version", "kind", "name"]);
export const JSON_PATCH_OPS = new Set(["add", "remove", "replace", "test"]);

/** Kinds kustomize treats as cluster-scoped (the namespace transformer skips them). */
const CLUSTER_SCOPED = new Set([
  "Namespace",
  "ClusterRole",
  "ClusterRoleBinding",
  "CustomResourceDefinition",
  "PersistentVolume",
  "StorageClass",
  "PriorityClass",
  "MutatingWebhookConfiguration",
  "ValidatingWebhookConfiguration",
  "APIService",
]);

/** Where each workload kind keeps its pod template(s), as field paths. */
const POD_TEMPLATE_PATHS: Record<string, string[][]> = {
  Deployment: [["spec", "template"]],
  ReplicaSet: [["spec", "template"]],
  StatefulSet: [["spec", "template"]],
  DaemonSet: [["spec", "template"]],
  Job: [["spec", "template"]],
  CronJob: [
    ["spec", "jobTemplate"],
    ["spec", "jobTemplate", "spec", "template"],
  ],
};

export class KustomizeError extends Error {}

function fail(message: string): never {
  throw new KustomizeError(message);
}

function checkFields(what: string, value: unknown, allowed: Set<string>): void {
  if (value === null || typeof value !== "object" || Array.isArray(value)) fail(`${what} must be a mapping`);
  for (const key of Object.keys(value as object)) {
    if (!allowed.has(key)) fail(`${what}: field "${key}" is not supported by the offline renderer`);
  }
}

export function kustomizationPath(dir: string): string {
  const file = join(dir, "kustomization.yaml");
  if (!existsSync(file)) fail(`${dir}: no kustomization.yaml (other spellings are not supported)`);
  return file;
}

export function parseYamlDocuments(file: string): unknown[] {
  return parseAllDocuments(readFileSync(file, "utf8")).flatMap((doc) => {
    if (doc.errors.length > 0) fail(`${file}: ${doc.errors.map((e) => e.message).join("; ")}`);
    const value = doc.toJS();
    return value === null || value === undefined ? [] : [value];
  });
}

export function loadKustomization(dir: string): KObject {
  const file = kustomizationPath(dir);
  const docs = parseYamlDocuments(file);
  if (docs.length !== 1) fail(`${file}: expected exactly one document`);
  const k = docs[0] as KObject;
  checkFields(file, k, KUSTOMIZATION_FIELDS);
  if (k.apiVersion !== "kustomize.config.k8s.io/v1beta1" || k.kind !== "Kustomization") {
    fail(`${file}: apiVersion/kind must be kustomize.config.k8s.io/v1beta1 Kustomization`);
  }
  for (const list of ["resources", "labels", "configMapGenerator", "secretGenerator", "images", "patches"]) {
    if (k[list] !== undefined && !Array.isArray(k[list])) fail(`${file}: ${list} must be a list`);
  }
  for (const label of k.labels ?? []) {
    checkFields(`${file} labels[]`, label, LABEL_FIELDS);
    if (label.includeSelectors === true) fail(`${file}: labels with includeSelectors are not supported`);
  }
  for (const generator of [...(k.configMapGenerator ?? []), ...(k.secretGenerator ?? [])]) {
    checkFields(`${file} generator`, generator, GENERATOR_FIELDS);
    if (generator.options !== undefined)
      checkFields(`${file} generator options`, generator.options, new Set(["disableNameSuffixHash"]));
  }
  for (const image of k.images ?? []) checkFields(`${file} images[]`, image, IMAGE_FIELDS);
  for (const patch of k.patches ?? []) {
    checkFields(`${file} patches[]`, patch, PATCH_FIELDS);
    if (patch.target === undefined) fail(`${file}: every patch needs a target`);
    checkFields(`${file} patches[].target`, patch.target, TARGET_FIELDS);
  }
  return k;
}

/** The operations of a JSON 6902 patch, from `path` (relative to dir) or inline `patch`. */
export function loadJsonPatch(dir: string, patch: KObject): KObject[] {
  if ((patch.path === undefined) === (patch.patch === undefined))
    fail(`${dir}: a patch needs exactly one of path and patch`);
  const docs =
    patch.path !== undefined
      ? parseYamlDocuments(resolve(dir, patch.path))
      : parseAllDocuments(String(patch.patch)).map((d) => d.toJS());
  const ops = docs[0];
  if (docs.length !== 1 || !Array.isArray(ops)) {
    fail(
      `${dir}: patch ${patch.path ?? "(inline)"} is not a JSON 6902 patch; strategic-merge patches are not supported`,
    );
  }
  for (const op of ops) {
    checkFields(`${dir} patch ${patch.path ?? "(inline)"}`, op, new Set(["op", "path", "value"]));
    if (!JSON_PATCH_OPS.has(op.op)) fail(`${dir}: patch op "${op.op}" is not supported`);
    if (typeof op.path !== "string" || !op.path.startsWith("/"))
      fail(`${dir}: patch path "${op.path}" must be a JSON pointer`);
    if (op.op !== "remove" && !("value" in op)) fail(`${dir}: patch op ${op.op} ${op.path} needs a value`);
  }
  return ops as KObject[];
}

// ---------------------------------------------------------------------------------------------
// JSON 6902 (RFC 6902 / RFC 6901)

function pointerTokens(pointer: string): string[] {
  return pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function deepEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as KObject)[k])]),
    );
  }
  return value;
}

export function applyJsonPatch(target: KObject, ops: KObject[]): void {
  for (const { op, path, value } of ops) {
    const tokens = pointerTokens(path);
    const last = tokens.pop()!;
    let parent: any = target;
    for (const token of tokens) {
      parent = Array.isArray(parent) ? parent[arrayIndex(parent, token, path, false)] : parent?.[token];
      if (parent === null || typeof parent !== "object") fail(`patch ${op} ${path}: path does not exist`);
    }
    const exists = Array.isArray(parent) ? last !== "-" && Number(last) < parent.length : Object.hasOwn(parent, last);
    switch (op) {
      case "test":
        if (!exists || !deepEqual(Array.isArray(parent) ? parent[Number(last)] : parent[last], value)) {
          fail(`patch test ${path} failed: expected ${JSON.stringify(value)}`);
        }
        break;
      case "remove":
      case "replace":
        if (!exists) fail(`patch ${op} ${path}: path does not exist`);
        if (Array.isArray(parent))
          parent.splice(
            arrayIndex(parent, last, path, false),
            1,
            ...(op === "replace" ? [structuredClone(value)] : []),
          );
        else if (op === "replace") parent[last] = structuredClone(value);
        else delete parent[last];
        break;
      case "add":
        if (Array.isArray(parent))
          parent.splice(last === "-" ? parent.length : arrayIndex(parent, last, path, true), 0, structuredClone(value));
        else parent[last] = structuredClone(value);
        break;
      default:
        fail(`patch op "${op}" is not supported`);
    }
  }
}

function arrayIndex(array: unknown[], token: string, path: string, forInsert: boolean): number {
  if (!/^(0|[1-9][0-9]*)$/.test(token)) fail(`patch ${path}: "${token}" is not an array index`);
  const index = Number(token);
  if (index > array.length || (!forInsert && index === array.length))
    fail(`patch ${path}: index ${index} out of range`);
  return index;
}

// ---------------------------------------------------------------------------------------------
// Generators and kustomize's name hash (api/hasher): sha256 of Go's json.Marshal of
// {data, kind, name: "", [type]} (keys sorted, HTML-escaped), first 10 hex digits with
// 0,1,3,a,e mapped to g,h,k,m,t.

function goJson(value: unknown): string {
  return JSON.stringify(canonical(value))
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e")
    .replace(/&/g, "\\u0026")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029")
    .replace(/\\b/g, "\\u0008")
    .replace(/\\f/g, "\\u000c");
}

export function kustomizeHash(object: KObject): string {
  const encoded =
    object.kind === "ConfigMap"
      ? { kind: "ConfigMap", name: "", data: object.data ?? {} }
      : { kind: "Secret", type: object.type, name: "", data: object.data ?? {} };
  const hex = createHash("sha256").update(goJson(encoded)).digest("hex");
  const map: Record<string, string> = { "0": "g", "1": "h", "3": "k", a: "m", e: "t" };
  return [...hex.slice(0, 10)].map((c) => map[c] ?? c).join("");
}

function literals(where: string, generator: KObject): Record<string, string> {
  const data: Record<string, string> = {};
  for (const literal of generator.literals ?? []) {
    const text = String(literal);
    const eq = text.indexOf("=");
    if (eq <= 0) fail(`${where}: literal "${text}" is not KEY=VALUE`);
    const value = text.slice(eq + 1);
    if (/^["']/.test(value)) fail(`${where}: quoted literal values are not supported ("${text}")`);
    data[text.slice(0, eq)] = value;
  }
  return data;
}

function generate(dir: string, kind: "ConfigMap" | "Secret", generator: KObject, resources: Resource[]): void {
  const where = `${dir} ${kind} generator ${generator.name}`;
  if (typeof generator.name !== "string") fail(`${where}: name required`);
  if (kind === "ConfigMap" && generator.type !== undefined) fail(`${where}: type applies to secrets only`);
  const plain = literals(where, generator);
  const data =
    kind === "Secret"
      ? Object.fromEntries(Object.entries(plain).map(([k, v]) => [k, Buffer.from(v).toString("base64")]))
      : plain;
  const behavior = generator.behavior ?? "create";
  const existing = resources.find((r) => r.object.kind === kind && r.object.metadata?.name === generator.name);
  if (behavior === "create") {
    if (existing !== undefined) fail(`${where}: already exists (use behavior: merge)`);
    const object: KObject = { apiVersion: "v1", kind, metadata: { name: generator.name } };
    if (kind === "Secret") object.type = generator.type ?? "Opaque";
    object.data = data;
    resources.push({ object, needsHash: generator.options?.disableNameSuffixHash !== true });
  } else if (behavior === "merge") {
    if (existing === undefined) fail(`${where}: behavior merge but no such ${kind} from the resources`);
    if (generator.options !== undefined || generator.type !== undefined)
      fail(`${where}: options/type with merge are not supported`);
    existing.object.data = { ...(existing.object.data ?? {}), ...data };
  } else {
    fail(`${where}: behavior "${behavior}" is not supported`);
  }
}

// ---------------------------------------------------------------------------------------------
// Transformers

function at(object: KObject, path: string[], create: boolean): KObject | undefined {
  let node: any = object;
  for (const key of path) {
    if (node[key] === undefined || node[key] === null) {
      if (!create) return undefined;
      node[key] = {};
    }
    node = node[key];
  }
  return node;
}

function podSpecs(object: KObject): KObject[] {
  const paths = POD_TEMPLATE_PATHS[object.kind] ?? [];
  const templates = object.kind === "CronJob" ? [paths[1]!] : paths;
  return templates.map((p) => at(object, [...p, "spec"], false)).filter((s): s is KObject => s !== undefined);
}

function containersOf(spec: KObject): KObject[] {
  return [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
}

function setImages(resources: Resource[], images: KObject[]): void {
  for (const { object } of resources) {
    for (const container of podSpecs(object).flatMap(containersOf)) {
      if (typeof container.image !== "string") continue;
      const { name, tag, digest } = splitImage(container.image);
      const rule = images.find((i) => i.name === name);
      if (rule === undefined) continue;
      const newName = rule.newName ?? name;
      if (rule.digest !== undefined) container.image = `${newName}@${rule.digest}`;
      else if (rule.newTag !== undefined) container.image = `${newName}:${rule.newTag}`;
      else container.image = `${newName}${digest ? `@${digest}` : tag ? `:${tag}` : ""}`;
    }
  }
}

function splitImage(image: string): { name: string; tag?: string; digest?: string } {
  const at = image.indexOf("@");
  if (at >= 0) return { name: image.slice(0, at), digest: image.slice(at + 1) };
  const colon = image.lastIndexOf(":");
  if (colon > image.lastIndexOf("/")) return { name: image.slice(0, colon), tag: image.slice(colon + 1) };
  return { name: image };
}

function setLabels(resources: Resource[], entry: KObject): void {
  const pairs = Object.fromEntries(Object.entries(entry.pairs ?? {}).map(([k, v]) => [k, String(v)]));
  for (const { object } of resources) {
    Object.assign(at(object, ["metadata", "labels"], true)!, pairs);
    if (entry.includeTemplates === true) {
      for (const path of POD_TEMPLATE_PATHS[object.kind] ?? [])
        Object.assign(at(object, [...path, "metadata", "labels"], true)!, pairs);
    }
  }
}

function matchesTarget(object: KObject, target: KObject): boolean {
  const [group, version] = String(object.apiVersion).includes("/")
    ? String(object.apiVersion).split("/")
    : ["", object.apiVersion];
  if (target.name !== undefined && !/^[A-Za-z0-9-]+$/.test(target.name))
    fail(`patch target name "${target.name}": regular expressions are not supported`);
  return (
    (target.kind === undefined || target.kind === object.kind) &&
    (target.name === undefined || target.name === object.metadata?.name) &&
    (target.group === undefined || target.group === group) &&
    (target.version === undefined || target.version === version)
  );
}

// ---------------------------------------------------------------------------------------------

function accumulate(dir: string, seen: Set<string>): Resource[] {
  const key = resolve(dir);
  if (seen.has(key)) fail(`${dir}: kustomization cycle`);
  const k = loadKustomization(dir);
  const resources: Resource[] = [];
  const ids = new Set<string>();
  const add = (resource: Resource) => {
    const id = `${resource.object.apiVersion}/${resource.object.kind}/${resource.object.metadata?.namespace ?? ""}/${resource.object.metadata?.name}`;
    if (ids.has(id)) fail(`${dir}: resource ${id} is defined twice`);
    ids.add(id);
    resources.push(resource);
  };
  for (const entry of k.resources ?? []) {
    const path = resolve(dir, String(entry));
    if (!existsSync(path)) fail(`${dir}: resource ${entry} does not exist`);
    if (statSync(path).isDirectory()) accumulate(path, new Set([...seen, key])).forEach(add);
    else for (const object of parseYamlDocuments(path)) add({ object: object as KObject, needsHash: false });
  }
  for (const generator of k.configMapGenerator ?? []) generate(dir, "ConfigMap", generator, resources);
  for (const generator of k.secretGenerator ?? []) generate(dir, "Secret", generator, resources);

  for (const patch of k.patches ?? []) {
    const ops = loadJsonPatch(dir, patch);
    const targets = resources.filter((r) => matchesTarget(r.object, patch.target));
    if (targets.length === 0) fail(`${dir}: patch ${patch.path ?? "(inline)"} matches no resource`);
    for (const target of targets) applyJsonPatch(target.object, ops);
  }
  if (k.namespace !== undefined) {
    for (const { object } of resources)
      if (!CLUSTER_SCOPED.has(object.kind)) at(object, ["metadata"], true)!.namespace = k.namespace;
  }
  for (const entry of k.labels ?? []) setLabels(resources, entry);
  if (k.images !== undefined) setImages(resources, k.images);
  return resources;
}

/** Fixes pod-template references to generated ConfigMaps/Secrets renamed by their hash. */
function fixReferences(resources: Resource[], renamed: Map<string, string>): void {
  for (const { object } of resources) {
    const namespace = object.metadata?.namespace ?? "";
    const rename = (kind: string, holder: KObject | undefined, field: string) => {
      if (holder === undefined || typeof holder[field] !== "string") return;
      const newName = renamed.get(`${kind}/${namespace}/${holder[field]}`);
      if (newName !== undefined) holder[field] = newName;
    };
    for (const spec of podSpecs(object)) {
      for (const container of containersOf(spec)) {
        for (const source of container.envFrom ?? []) {
          rename("ConfigMap", source.configMapRef, "name");
          rename("Secret", source.secretRef, "name");
        }
        for (const env of container.env ?? []) {
          rename("ConfigMap", env.valueFrom?.configMapKeyRef, "name");
          rename("Secret", env.valueFrom?.secretKeyRef, "name");
        }
      }
      for (const volume of spec.volumes ?? []) {
        rename("ConfigMap", volume.configMap, "name");
        rename("Secret", volume.secret, "secretName");
        for (const source of volume.projected?.sources ?? []) {
          rename("ConfigMap", source.configMap, "name");
          rename("Secret", source.secret, "name");
        }
      }
      for (const pullSecret of spec.imagePullSecrets ?? []) rename("Secret", pullSecret, "name");
    }
  }
}

/** What `kubectl kustomize <dir>` prints, as objects (order not significant). */
export function kustomizeBuild(dir: string): KObject[] {
  const resources = accumulate(dir, new Set());
  const renamed = new Map<string, string>();
  for (const resource of resources) {
    if (!resource.needsHash) continue;
    const { kind, metadata } = resource.object;
    const newName = `${metadata.name}-${kustomizeHash(resource.object)}`;
    renamed.set(`${kind}/${metadata.namespace ?? ""}/${metadata.name}`, newName);
    metadata.name = newName;
  }
  fixReferences(resources, renamed);
  return resources.map((r) => r.object);
}
