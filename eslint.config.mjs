// Lint: ESLint's and typescript-eslint's recommended rules, and the Effect team's dprint
// formatting rule (@effect/eslint-plugin) with this repository's style. `npm run lint`; CI runs it.
import * as effectEslint from "@effect/eslint-plugin"
import eslint from "@eslint/js"
import globals from "globals"
import tseslint from "typescript-eslint"

// ---- No patching: libraries and node are reached through their public API only ----

/**
 * Module paths that are a library's private modules: Effect's (whose package exports only `effect`
 * and `effect/<Module>`), any `internal`, `dist` or `src` folder of an `@effect/*` package (some
 * export `@effect/<package>/<Module>/<Part>`), and node-postgres's (`pg/lib/*` and its helpers'
 * deep paths). Written with `\x2F` for "/": no-restricted-syntax's selectors cannot hold a slash.
 */
const PRIVATE_MODULE = [
  String.raw`^effect\x2F(?:internal|dist|src)(?:\x2F|$)`,
  String.raw`^effect\x2F[^\x2F]+\x2F`,
  String.raw`^@effect\x2F[^\x2F]+\x2F(?:.+\x2F)?(?:internal|dist|src)(?:\x2F|$)`,
  String.raw`^pg\x2F(?!package\.json$)`,
  String.raw`^pg-(?:protocol|pool|cursor|types)\x2F`
].join("|")
const PRIVATE_MODULE_MESSAGE = "A library's private module: use its public entry points (effect, effect/<Module>, @effect/<package>/<Module>, pg)."

/** Methods of node's emitters, streams, servers and sockets, and of node-postgres's clients: never replaced on an object. */
const NODE_METHODS = new Set(
  `emit on once off addListener removeListener removeAllListeners prependListener prependOnceListener setMaxListeners
   write end destroy pipe unpipe push read pause resume cork uncork setEncoding _read _write _writev _final _transform _flush
   _destroy _construct listen close address connect setTimeout setNoDelay setKeepAlive ref unref writeHead setHeader getHeader
   removeHeader flushHeaders closeAllConnections closeIdleConnections handleUpgrade query release submit then`.split(/\s+/)
)
/** The global's properties node documents as the ones to set: `process.exitCode`, `process.env.*`. */
const SETTABLE_GLOBALS = new Map([["process", new Set(["exitCode", "env"])]])

const unwrap = (node) =>
  ["TSNonNullExpression", "TSAsExpression", "TSSatisfiesExpression", "TSTypeAssertion", "ChainExpression"].includes(node.type) ? unwrap(node.expression) : node
const isCall = (node, object, property) =>
  node.type === "CallExpression" && node.callee.type === "MemberExpression" && node.callee.object.type === "Identifier" &&
  node.callee.object.name === object && !node.callee.computed && node.callee.property.name === property
/** An object made where it is written: a literal, `new`, `Object.create`. */
const isFresh = (node) => ["ObjectExpression", "ArrayExpression", "NewExpression", "ClassExpression"].includes(node.type) || isCall(node, "Object", "create")
/** What an assignment that replaces a method assigns: a function, or one taken from elsewhere. */
const isFunctionLike = (node) => ["FunctionExpression", "ArrowFunctionExpression", "Identifier", "MemberExpression", "CallExpression"].includes(node.type)

/** The variable `identifier` names, from the innermost scope out; undefined for an undeclared global. */
const variableOf = (context, identifier) => {
  for (let scope = context.sourceCode.getScope(identifier); scope !== null; scope = scope.upper) {
    const variable = scope.set.get(identifier.name)
    if (variable !== undefined) return variable
  }
  return undefined
}
/** Where the object a name holds comes from: "global", "import" (an import or require), or undefined (the file's own). */
const originOf = (context, identifier) => {
  const variable = variableOf(context, identifier)
  if (variable === undefined || variable.defs.length === 0) return "global"
  const imported = variable.defs.some((def) => {
    if (def.type === "ImportBinding") return true
    let init = def.type === "Variable" && def.node.init ? unwrap(def.node.init) : undefined
    if (init?.type === "AwaitExpression") init = unwrap(init.argument)
    return init?.type === "ImportExpression" || (init?.type === "CallExpression" && init.callee.type === "Identifier" && init.callee.name === "require")
  })
  return imported ? "import" : undefined
}

/**
 * Writes (`=`, `+=`, `++`, `delete`) that change an object the project does not own: a property of
 * an imported module's object (`pg.defaults.x = ...`, `http.globalAgent = ...`), of a global
 * (`Promise.x`, `process.emitWarning = ...`; `process.exitCode` and `process.env` are node's to
 * set), anything under a `prototype`, and a node or node-postgres method replaced on any object
 * (`server.emit = ...`, `server.close = ...`, `socket.write = ...`) by a function. Writes to the
 * project's own objects (their fields, `this.x`, an object literal's `end` or `close` data) pass.
 */
const noPatching = {
  meta: {
    type: "problem",
    schema: [],
    messages: {
      prototype: "Writes under a prototype: behaviour changed for every instance. Subclass or wrap instead.",
      import: "Writes to a property of '{{name}}', an imported module's object: use its public API, or wrap it.",
      global: "Writes to a property of the global '{{name}}': node's and the runtime's objects are not the project's to change.",
      method: "Replaces '{{name}}', a method of node's emitters, streams, servers and sockets (or a pg client's): call the API, or wrap the object."
    }
  },
  create(context) {
    const check = (written, value) => {
      const target = unwrap(written)
      if (target.type !== "MemberExpression") return
      let root = target
      let first = target
      while (root.type === "MemberExpression") {
        if (!root.computed && root.property.name === "prototype") return context.report({ node: target, messageId: "prototype" })
        first = root
        root = unwrap(root.object)
      }
      if (root.type === "Identifier") {
        const origin = originOf(context, root)
        const settable = origin === "global" && !first.computed && SETTABLE_GLOBALS.get(root.name)?.has(first.property.name)
        if (origin !== undefined && !settable) return context.report({ node: target, messageId: origin, data: { name: root.name } })
      }
      if (
        root.type !== "ThisExpression" && !target.computed && NODE_METHODS.has(target.property.name) &&
        (value === undefined || isFunctionLike(unwrap(value)))
      ) {
        context.report({ node: target, messageId: "method", data: { name: target.property.name } })
      }
    }
    return {
      AssignmentExpression: (node) => check(node.left, node.right),
      UpdateExpression: (node) => check(node.argument, undefined),
      "UnaryExpression[operator='delete']": (node) => check(node.argument, undefined)
    }
  }
}

/**
 * Properties defined or an object's prototype set by reflection (`Object.defineProperty`,
 * `Object.setPrototypeOf`, `Reflect.set` and the like: how a library's internals get replaced), and
 * `Object.assign` onto an object the file did not make: one imported, global, or returned by a
 * call (a library's service, `Context.get(...)`). Objects made here (a literal, `new`,
 * `Object.create`) and the file's own variables holding them pass.
 */
const REFLECTIVE = [
  ["Object", "defineProperty"],
  ["Object", "defineProperties"],
  ["Object", "setPrototypeOf"],
  ["Reflect", "set"],
  ["Reflect", "defineProperty"],
  ["Reflect", "deleteProperty"],
  ["Reflect", "setPrototypeOf"]
]
const noForeignAssign = {
  meta: {
    type: "problem",
    schema: [],
    messages: {
      reflective: "{{name}} changes an object's shape behind its API: make the object you need instead.",
      assign: "Object.assign onto an object this file did not make (imported, global, or returned by a call): wrap it or make a new one."
    }
  },
  create(context) {
    /** Whether the object `node` gives was made elsewhere: imported, global, or what a call, `yield*` or `await` gave. */
    const foreign = (node) => {
      node = unwrap(node)
      if (isFresh(node)) return false
      if (["CallExpression", "YieldExpression", "AwaitExpression"].includes(node.type)) return true
      if (node.type !== "Identifier") return false
      const variable = variableOf(context, node)
      if (originOf(context, node) !== undefined) return true
      return variable.defs.some((def) => def.type === "Variable" && def.node.init !== null && foreign(def.node.init))
    }
    return {
      CallExpression: (node) => {
        const reflective = REFLECTIVE.find(([object, property]) => isCall(node, object, property))
        if (reflective !== undefined) return context.report({ node, messageId: "reflective", data: { name: reflective.join(".") } })
        if (isCall(node, "Object", "assign") && node.arguments.length > 0 && foreign(node.arguments[0])) context.report({ node, messageId: "assign" })
      }
    }
  }
}

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
  // no library's private modules, no patching of library or node objects (the page's browser code excepted: it writes the DOM)
  {
    ignores: ["web/**"],
    plugins: { project: { rules: { "no-patching": noPatching, "no-foreign-assign": noForeignAssign } } },
    rules: {
      "no-restricted-imports": ["error", { patterns: [{ regex: PRIVATE_MODULE, message: PRIVATE_MODULE_MESSAGE }] }],
      "no-restricted-syntax": [
        "error",
        { selector: `CallExpression[callee.name='require'][arguments.0.value=/${PRIVATE_MODULE}/]`, message: PRIVATE_MODULE_MESSAGE },
        { selector: `ImportExpression[source.value=/${PRIVATE_MODULE}/]`, message: PRIVATE_MODULE_MESSAGE },
        {
          // how a library's global state is reached (the registry of Effect's root fibers was `effect/FiberScope/Global`)
          selector: "CallExpression[callee.object.name='Symbol'][callee.property.name='for'][arguments.0.value=/^@?effect\\x2F/]",
          message: "Effect's global registry is its private state: use its public API."
        }
      ],
      "project/no-patching": "error",
      "project/no-foreign-assign": "error"
    }
  },
  // Pglite.ts builds the embedded database's PgClient as @effect/sql-pg builds its own: the
  // SqlClient it has just made by SqlClient.make, with PgClient's members added (not replaced).
  { files: ["src/Db/Pglite.ts"], rules: { "project/no-foreign-assign": "off" } },
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
