/**
 * Offline validation of Kubernetes manifests against the published schemas.
 *
 * Two checks, both from the same packages (kubernetes-models for Kubernetes 1.27 APIs,
 * @kubernetes-models/keda for keda.sh/v1alpha1):
 *  1. the package's JSON-schema validator (`new Model(obj).validate()`): required fields,
 *     types, enums, formats such as resource quantities;
 *  2. an unknown-field check, because those schemas (like the API server) accept fields they
 *     do not know. It walks the object alongside the package's TypeScript declaration of the
 *     kind (read with the TypeScript compiler API) and reports every key the declaration does
 *     not have, as `kubectl apply --validate=strict` would. Maps (labels, annotations,
 *     ConfigMap data, KEDA trigger metadata...) are declared with index signatures and
 *     accept any key.
 */
import { join } from "node:path";
import ts from "typescript";
import * as keda from "@kubernetes-models/keda/keda.sh/v1alpha1";
import * as appsV1 from "kubernetes-models/apps/v1";
import * as autoscalingV2 from "kubernetes-models/autoscaling/v2";
import * as batchV1 from "kubernetes-models/batch/v1";
import * as policyV1 from "kubernetes-models/policy/v1";
import * as coreV1 from "kubernetes-models/v1";

export type Manifest = Record<string, unknown>;

interface ModelClass {
  new (data: never): { validate(): void };
}

interface KindInfo {
  model: ModelClass;
  /** Module and interface that declare the kind's fields, for the unknown-field check. */
  typeModule: string;
  typeName: string;
}

function kindInfo(model: unknown, typeModule: string, kind: string): KindInfo {
  return { model: model as ModelClass, typeModule: `${typeModule}/${kind}`, typeName: `I${kind}` };
}

/** Every apiVersion/kind the manifests may use; anything else is an error, not a skip. */
const KINDS: Record<string, KindInfo> = {
  "v1/Namespace": kindInfo(coreV1.Namespace, "kubernetes-models/v1", "Namespace"),
  "v1/ConfigMap": kindInfo(coreV1.ConfigMap, "kubernetes-models/v1", "ConfigMap"),
  "v1/Secret": kindInfo(coreV1.Secret, "kubernetes-models/v1", "Secret"),
  "v1/Service": kindInfo(coreV1.Service, "kubernetes-models/v1", "Service"),
  "apps/v1/Deployment": kindInfo(appsV1.Deployment, "kubernetes-models/apps/v1", "Deployment"),
  "batch/v1/Job": kindInfo(batchV1.Job, "kubernetes-models/batch/v1", "Job"),
  "autoscaling/v2/HorizontalPodAutoscaler": kindInfo(
    autoscalingV2.HorizontalPodAutoscaler,
    "kubernetes-models/autoscaling/v2",
    "HorizontalPodAutoscaler",
  ),
  "policy/v1/PodDisruptionBudget": kindInfo(
    policyV1.PodDisruptionBudget,
    "kubernetes-models/policy/v1",
    "PodDisruptionBudget",
  ),
  "keda.sh/v1alpha1/ScaledObject": kindInfo(
    keda.ScaledObject,
    "@kubernetes-models/keda/keda.sh/v1alpha1",
    "ScaledObject",
  ),
  "keda.sh/v1alpha1/TriggerAuthentication": kindInfo(
    keda.TriggerAuthentication,
    "@kubernetes-models/keda/keda.sh/v1alpha1",
    "TriggerAuthentication",
  ),
};

export const SUPPORTED_KINDS = Object.keys(KINDS);

const HERE = __dirname;

/** The TypeScript declarations of every supported kind, loaded once. */
let declaredTypes: { checker: ts.TypeChecker; types: Map<string, ts.Type> } | undefined;

/** Loads the declarations now (a few seconds), e.g. from a beforeAll with a generous timeout. */
export function preloadDeclaredTypes(): void {
  loadDeclaredTypes();
}

function loadDeclaredTypes(): { checker: ts.TypeChecker; types: Map<string, ts.Type> } {
  if (declaredTypes !== undefined) return declaredTypes;
  const entries = Object.entries(KINDS);
  // A virtual module beside this file, so node_modules resolves as for any source here.
  const virtualFile = join(HERE, "__k8s_declared_types__.ts");
  const source = entries
    .map(
      ([, info], i) =>
        `import type { ${info.typeName} as T${i} } from "${info.typeModule}";\nexport type K${i} = T${i};`,
    )
    .join("\n");
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    lib: ["lib.es2022.d.ts"], // no DOM: only what the declarations need
  };
  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.fileExists = (
    (exists) => (name: string) =>
      name === virtualFile || exists(name)
  )(host.fileExists.bind(host));
  host.readFile = (name) => (name === virtualFile ? source : readFile(name));
  host.getSourceFile = (name, languageVersion, onError, shouldCreate) =>
    name === virtualFile
      ? ts.createSourceFile(name, source, languageVersion, true)
      : getSourceFile(name, languageVersion, onError, shouldCreate);
  const program = ts.createProgram({ rootNames: [virtualFile], options, host });
  const problems = ts
    .getPreEmitDiagnostics(program, program.getSourceFile(virtualFile))
    .map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
  if (problems.length > 0) throw new Error(`cannot load the manifest type declarations: ${problems.join("; ")}`);
  const checker = program.getTypeChecker();
  const file = program.getSourceFile(virtualFile)!;
  const types = new Map<string, ts.Type>();
  for (const statement of file.statements) {
    if (!ts.isTypeAliasDeclaration(statement)) continue;
    const index = Number(statement.name.text.slice(1));
    types.set(entries[index]![0], checker.getTypeAtLocation(statement.name));
  }
  declaredTypes = { checker, types };
  return declaredTypes;
}

function unknownFields(checker: ts.TypeChecker, value: unknown, type: ts.Type, path: string, errors: string[]): void {
  if (value === null || typeof value !== "object") return; // scalars: the schema validator checks them
  const declared = checker.getNonNullableType(type);
  const members = declared.isUnion() ? declared.types : [declared];
  if (Array.isArray(value)) {
    const elementTypes = members
      .filter((member) => checker.isArrayType(member))
      .map((member) => checker.getTypeArguments(member as ts.TypeReference)[0]!);
    if (elementTypes.length === 0) return; // not declared as an array: a type error the schema reports
    value.forEach((item, i) => unknownFields(checker, item, elementTypes[0]!, `${path}[${i}]`, errors));
    return;
  }
  const objects = members.filter(
    (member) => (member.flags & ts.TypeFlags.Object) !== 0 && !checker.isArrayType(member),
  );
  if (objects.length === 0) return;
  for (const [key, child] of Object.entries(value)) {
    const childPath = path === "" ? key : `${path}.${key}`;
    const property = objects.map((member) => member.getProperty(key)).find((p) => p !== undefined);
    if (property !== undefined) {
      unknownFields(checker, child, checker.getTypeOfSymbol(property), childPath, errors);
      continue;
    }
    const index = objects
      .map((member) => checker.getIndexInfoOfType(member, ts.IndexKind.String))
      .find((i) => i !== undefined);
    if (index !== undefined) unknownFields(checker, child, index.type, childPath, errors);
    else errors.push(`${childPath}: unknown field "${key}"`);
  }
}

export function manifestId(manifest: Manifest): string {
  const metadata = (manifest.metadata ?? {}) as { name?: string; namespace?: string };
  return `${String(manifest.apiVersion)}/${String(manifest.kind)} ${metadata.namespace ? `${metadata.namespace}/` : ""}${metadata.name ?? "<unnamed>"}`;
}

/**
 * Every problem found in one manifest, as readable strings; [] means valid. With
 * `partial: true` (patch fragments) only the unknown-field check runs.
 */
export function validateManifest(manifest: unknown, { partial = false }: { partial?: boolean } = {}): string[] {
  if (manifest === null || typeof manifest !== "object" || Array.isArray(manifest))
    return ["a manifest must be a mapping"];
  const m = manifest as Manifest;
  const key = `${String(m.apiVersion)}/${String(m.kind)}`;
  const info = KINDS[key];
  if (info === undefined) return [`no schema for apiVersion/kind "${key}" (supported: ${SUPPORTED_KINDS.join(", ")})`];
  const errors: string[] = [];
  if (!partial) {
    const metadata = m.metadata as { name?: unknown } | undefined;
    if (typeof metadata?.name !== "string" || metadata.name === "") errors.push("metadata.name: required");
    try {
      new info.model(structuredClone(m) as never).validate();
    } catch (error) {
      errors.push(`schema: ${(error as Error).message}`);
    }
  }
  const { checker, types } = loadDeclaredTypes();
  unknownFields(checker, m, types.get(key)!, "", errors);
  return errors;
}
