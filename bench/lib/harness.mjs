/**
 * The shared harness of the benchmarks, one import for all of it: the basics (basics.mjs), local
 * ports (ports.mjs), CPU time and a quiet machine (cpu.mjs), child processes (children.mjs), the
 * PostgreSQL server (postgres.mjs), the service under test (service.mjs), the machine's description
 * (machine.mjs) and wrk (wrk.mjs).
 */
export * from "./basics.mjs"
export * from "./children.mjs"
export * from "./cpu.mjs"
export * from "./machine.mjs"
export * from "./ports.mjs"
export * from "./postgres.mjs"
export * from "./service.mjs"
export * from "./wrk.mjs"
