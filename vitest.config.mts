import { readdirSync } from "node:fs";
import { resolve } from "node:path";
import UnpluginTypia from "@typia/unplugin/vite";
import { defineConfig } from "vitest/config";

/** Tests run the TypeScript sources of every package (typia transformed), not the build. */
const workspaceAliases = ["apps", "libs"].flatMap((group) =>
  readdirSync(resolve(import.meta.dirname, group)).map((name) => ({
    find: new RegExp(`^@cm/${name}$`),
    replacement: resolve(import.meta.dirname, group, name, "src/index.ts"),
  })),
);

export default defineConfig({
  plugins: [UnpluginTypia({ log: false, cache: false, tsconfig: resolve(import.meta.dirname, "tsconfig.base.json") })],
  resolve: { alias: workspaceAliases },
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    maxWorkers: 2,
  },
});
