/**
 * Offline checks of compose.yaml (no container engine runs here): its services, and that
 * everything it names exists: the images' entry points and ctl command, the settings the config
 * reads, the ports the processes listen on, the services it depends on.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { loadConfig } from "@cm/config";

const ROOT = resolve(import.meta.dirname, "../..");
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

interface Service {
  image?: string;
  build?: string;
  command?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  ports?: string[];
}
const compose = parse(read("compose.yaml")) as { services: Record<string, Service> };
const services = compose.services;
const apps = ["migrate", "gateway", "worker"] as const;

/** The value compose gives `${NAME:-default}` when NAME is not set. */
const interpolated = (value: string) => value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, "$1");
const environment = (service: Service) =>
  Object.fromEntries(Object.entries(service.environment ?? {}).map(([name, value]) => [name, interpolated(value)]));

describe("compose.yaml", () => {
  it("runs Postgres 17, a Redis that keeps what it accepted, migrations, a gateway and a worker", () => {
    expect(Object.keys(services).sort()).toEqual(["gateway", "migrate", "postgres", "redis", "worker"]);
    expect(services.postgres?.image).toMatch(/^postgres:17(\.|$)/);
    const redis = services.redis?.command ?? [];
    const setting = (name: string) => redis[redis.indexOf(`--${name}`) + 1];
    expect(redis[0]).toBe("redis-server");
    expect(setting("appendonly")).toBe("yes");
    expect(setting("appendfsync")).toBe("everysec");
    expect(setting("maxmemory-policy")).toBe("noeviction");
  });

  it("builds every process from the Dockerfile and starts each by an entry point the image holds", () => {
    const dockerfile = read("Dockerfile");
    for (const name of apps) {
      const service = services[name] as Service;
      expect(service.build).toBe(".");
      const [node, script] = service.command ?? [];
      expect(node).toBe("node");
      const app = /^apps\/(\w+)\/dist\/(.+)\.js$/.exec(script ?? "");
      expect(app, `${name}: ${script}`).not.toBeNull();
      expect(existsSync(join(ROOT, `apps/${app?.[1]}/src/${app?.[2]}.ts`))).toBe(true);
      expect(dockerfile).toContain(`COPY --from=build /app/apps/${app?.[1]}/dist apps/${app?.[1]}/dist`);
    }
    expect(services.migrate?.command?.slice(2)).toEqual(["migrate"]);
    expect(read("apps/ctl/src/main.ts")).toContain('case "migrate":');
  });

  it("holds every lib in the image, its manifest installed and its build copied, as the apps import them", () => {
    const dockerfile = read("Dockerfile");
    for (const lib of readdirSync(join(ROOT, "libs"))) {
      expect(dockerfile).toContain(`COPY libs/${lib}/package.json libs/${lib}/`);
      expect(dockerfile).toContain(`COPY --from=build /app/libs/${lib}/package.json libs/${lib}/package.json`);
      expect(dockerfile).toContain(`COPY --from=build /app/libs/${lib}/dist libs/${lib}/dist`);
    }
  });

  it("gives the processes settings the config reads, and valid, naming the compose services", () => {
    const settingsRead = new Set(
      [...read("libs/config/src/config.ts").matchAll(/env\.([A-Z_]+)/g)].map((match) => match[1]),
    );
    for (const name of apps) {
      const env = environment(services[name] as Service);
      expect(Object.keys(env).filter((variable) => !settingsRead.has(variable))).toEqual([]);
      const config = loadConfig(env);
      expect(new URL(config.databaseUrl).hostname).toBe("postgres");
      expect(new URL(config.redisUrl).hostname).toBe("redis");
      expect(config.redisDurability).toBe("require");
      const password = new URL(config.databaseUrl).password;
      expect(password).toBe(environment(services.postgres as Service).POSTGRES_PASSWORD);
    }
  });

  it("starts each after what it needs, and checks each where its process answers", () => {
    for (const [name, service] of Object.entries(services)) {
      for (const needed of Object.keys(service.depends_on ?? {})) expect(Object.keys(services)).toContain(needed);
      if (name !== "migrate") expect(service.healthcheck?.test.length, name).toBeGreaterThan(1);
    }
    expect(services.migrate?.depends_on?.postgres?.condition).toBe("service_healthy");
    for (const name of ["gateway", "worker"]) {
      expect(services[name]?.depends_on?.migrate?.condition).toBe("service_completed_successfully");
      expect(services[name]?.depends_on?.redis?.condition).toBe("service_healthy");
    }
    const config = loadConfig(environment(services.gateway as Service));
    expect(services.gateway?.healthcheck?.test.join(" ")).toContain(`http://127.0.0.1:${config.port}/readyz`);
    expect(services.gateway?.ports).toEqual([`127.0.0.1:${config.port}:${config.port}`]);
    expect(services.worker?.healthcheck?.test.join(" ")).toContain(`http://127.0.0.1:${config.metricsPort}/readyz`);
  });
});
