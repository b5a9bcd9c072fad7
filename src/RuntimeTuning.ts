/**
 * V8 settings the service runs with, for the two cores it is sized for. Imported first by main.ts,
 * so every way the service is run has them (npm start, the Docker image, the benches, the tests).
 *
 * Young-generation collections run on the main thread only. By default V8 splits each one over
 * Node's four helper threads; on two cores a collection of a few megabytes costs more to
 * coordinate than it saves. With the catalogue feed at 1,000 changes a second the process spent
 * about 80 µs of CPU per logged change with the split and 62–70 without it, its main thread no
 * busier (bench/RESULTS.md, "2026-11-25, fourth session"). Old-generation marking stays
 * concurrent, off the main thread. V8 reads this flag at each collection, so setting it here, at
 * start-up, takes effect.
 *
 * The young generation's size cannot be changed once the heap exists: it is a node flag in
 * package.json's start script (`--max-semi-space-size=64`) and in the Dockerfile.
 */
import { setFlagsFromString } from "node:v8"

setFlagsFromString("--no-parallel-scavenge")
