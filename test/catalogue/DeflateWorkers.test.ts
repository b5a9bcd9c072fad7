/**
 * The dump's deflate slots (src/Catalogue/DeflateWorkers.ts): a slot's piece inflates back to its
 * input and carries the input's CRC-32; pieces of several slots, joined, are one deflate stream;
 * a piece larger than the slot's buffers grows them; a reply to an interrupted request is not
 * taken for the next request's.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { randomBytes } from "node:crypto"
import * as zlib from "node:zlib"
import { type DeflateSlot, makeDeflateSlots } from "../../src/Catalogue/DeflateWorkers.js"

const json = (n: number, seed: string) =>
  Buffer.from(JSON.stringify(Array.from({ length: n }, (_, i) => ({ id: `${seed}-${i}`, price: (i * 7919) % 10_000, noise: randomBytes(8).toString("hex") }))))

const deflated = (slot: DeflateSlot, raw: Buffer) =>
  Effect.suspend(() => {
    raw.copy(slot.input(raw.length))
    // the view is the slot's until its next use: copied here
    return Effect.map(slot.deflate(raw.length), (piece) => ({ ...piece, deflated: Buffer.from(piece.deflated) }))
  })

it.scoped("a piece inflates back to its input and carries its CRC-32 and length", () =>
  Effect.gen(function*() {
    const [slot] = yield* makeDeflateSlots({ slots: 1, workers: 1, level: 1, initialBytes: 1024 })
    const raw = json(20, "a").subarray(0, 900)
    const piece = yield* deflated(slot!, raw)
    expect(piece.length).toBe(raw.length)
    expect(piece.crc).toBe(zlib.crc32(raw))
    expect(zlib.inflateRawSync(piece.deflated, { finishFlush: zlib.constants.Z_SYNC_FLUSH }).equals(raw)).toBe(true)
  }))

it.scoped("pieces of two slots, deflated at once and joined, are one stream of the joined input; a larger piece grows the buffers", () =>
  Effect.gen(function*() {
    const slots = yield* makeDeflateSlots({ slots: 2, workers: 1, level: 1, initialBytes: 1024 })
    const parts = [json(10, "x"), json(5_000, "y"), json(30, "z")]
    const pieces: Array<{ readonly deflated: Buffer; readonly crc: number; readonly length: number }> = []
    // two at once, one per slot; the third reuses the first slot once its piece is read
    const [first, second] = yield* Effect.all([deflated(slots[0]!, parts[0]!), deflated(slots[1]!, parts[1]!)], { concurrency: 2 })
    pieces.push(first, second, yield* deflated(slots[0]!, parts[2]!))
    expect(parts[1]!.length).toBeGreaterThan(1024)
    const stream = Buffer.concat([...pieces.map((p) => p.deflated), Buffer.from([0x03, 0x00])])
    expect(zlib.inflateRawSync(stream).equals(Buffer.concat(parts))).toBe(true)
    expect(pieces.map((p) => p.crc)).toEqual(parts.map((p) => zlib.crc32(p)))
  }))

it.scoped("a request interrupted before its reply does not lend its result to the next request", () =>
  Effect.gen(function*() {
    const [slot] = yield* makeDeflateSlots({ slots: 1, workers: 1, level: 1, initialBytes: 1024 })
    const big = json(20_000, "big")
    const small = json(3, "small")
    big.copy(slot!.input(big.length))
    const interrupted = yield* Effect.fork(slot!.deflate(big.length))
    // the forked request is posted before it is interrupted
    yield* Effect.yieldNow()
    yield* Fiber.interrupt(interrupted)
    // the worker still deflates the big piece and replies first; that reply must be ignored
    const piece = yield* deflated(slot!, small)
    expect(piece.length).toBe(small.length)
    expect(piece.crc).toBe(zlib.crc32(small))
    expect(zlib.inflateRawSync(piece.deflated, { finishFlush: zlib.constants.Z_SYNC_FLUSH }).equals(small)).toBe(true)
  }))
