import js from "@eslint/js";
import prettier from "eslint-config-prettier";
import importPlugin from "eslint-plugin-import";
import globals from "globals";
import tseslint from "typescript-eslint";

/**
 * The folders of libs/domain from the bottom up (docs/code.md "libs/domain in layers"): each imports only
 * itself and the folders before it, so the kernel imports nothing else of the domain and
 * requests and resources sit on top. scripts/check-import-cycles.mjs finds any cycle left.
 */
const DOMAIN_LAYERS = [
  "kernel",
  "access",
  "topics",
  "journeys",
  "profiles",
  "events",
  "changes",
  "webhooks",
  "requests",
  "resources",
];

const domainLayerRules = DOMAIN_LAYERS.map((folder, index) => ({
  files: [`libs/domain/src/${folder}/**/*.ts`],
  rules: {
    "@typescript-eslint/no-restricted-imports": [
      "error",
      {
        patterns: [
          {
            group: ["@cm/domain", "../index", ...DOMAIN_LAYERS.slice(index + 1).map((above) => `../${above}/*`)],
            message: `libs/domain/src/${folder} imports only ${DOMAIN_LAYERS.slice(0, index + 1).join(", ")} (a layer below it or its own)`,
          },
        ],
      },
    ],
  },
}));

export default tseslint.config(
  { ignores: ["**/dist/**", "**/node_modules/**", "coverage/**", "bench/results/**", "bench/.prof/**", ".data/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    plugins: { import: importPlugin },
    languageOptions: { globals: globals.node },
    rules: {
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "import/no-duplicates": "error",
      "import/first": "error",
      "import/no-self-import": "error",
    },
  },
  {
    // Each package imports only what its own manifest declares.
    files: ["apps/*/src/**/*.ts", "libs/*/src/**/*.ts"],
    rules: {
      "import/no-extraneous-dependencies": ["error", { includeTypes: true }],
      "import/no-relative-packages": "error",
    },
  },
  {
    // Libraries are shared by the apps: no HTTP framework, no queue consumer, no app.
    files: ["libs/*/src/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [
            { name: "koa", message: "libs never import Koa; HTTP belongs to apps/gateway" },
            { name: "bullmq", importNames: ["Worker"], message: "libs never run queue consumers; that is apps/worker" },
          ],
          patterns: [
            { group: ["@koa/*"], message: "libs never import Koa; HTTP belongs to apps/gateway" },
            { group: ["@cm/gateway", "@cm/worker", "@cm/ctl"], message: "libs never import apps" },
          ],
        },
      ],
    },
  },
  ...domainLayerRules,
  {
    // Tests read arbitrary JSON answers; the rule guards the shipped code.
    files: ["test/**", "bench/**"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
  prettier,
);
