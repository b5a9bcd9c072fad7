// Lint: ESLint's and typescript-eslint's recommended rules, and the Effect team's dprint
// formatting rule (@effect/eslint-plugin) with this repository's style. `npm run lint`; CI runs it.
import * as effectEslint from "@effect/eslint-plugin"
import eslint from "@eslint/js"
import globals from "globals"
import tseslint from "typescript-eslint"

export default tseslint.config(
  // bench/*/out: the benchmarks' raw results and build snapshots (not committed)
  { ignores: ["dist/**", "node_modules/**", ".tmp/**", "data/**", "coverage/**", "bench/*/out/**"] },
  eslint.configs.recommended,
  tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  // TypeScript checks names itself; the plain JavaScript (scripts, benches) runs on Node
  { files: ["**/*.ts"], rules: { "no-undef": "off" } },
  { files: ["**/*.mjs", "**/*.js"], languageOptions: { globals: globals.node } },
  // the cabinet's page module runs in browsers
  { files: ["web/**/*.js"], languageOptions: { globals: globals.browser } },
  // tests read JSON answers loosely on purpose: an unexpected shape fails the assertion, not the compile
  { files: ["test/**", "bench/**"], rules: { "@typescript-eslint/no-explicit-any": "off" } },
  {
    rules: {
      // a leading underscore marks a parameter kept for its position
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 160,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }]
    }
  }
)
