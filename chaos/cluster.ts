/**
 * Two service processes ("nodes") on one PostgreSQL database, each reaching it through its own TCP
 * proxy (test/support/pg-proxy.ts) so that one node's connections can be cut or refused while the
 * other's are left alone. A slot's process can be killed (SIGKILL) or stopped (SIGTERM) and a new
 * one started in its place on the same database; every process ever started is kept, for its log
 * lines and how it ended.
 */
import type { FreshDatabase } from "../test/support/database.js"
import type { PgProxy } from "../test/support/pg-proxy.js"
import { sleep } from "../test/support/polling.js"
import { type RunningServer, startServer } from "../test/support/server.js"

/**
 * The one warning the faults cause by design: a supervised fiber whose database connection was cut
 * is restarted. The harness counts such restarts as errors unless they are expected.
 */
export const EXPECTED_LINES: ReadonlyArray<RegExp> = [/supervised fiber lost its database connection; restarting/]

export interface Incarnation {
  readonly slot: number
  /** 1 for the slot's first process, then 2, 3... */
  readonly number: number
  readonly server: RunningServer
  readonly startedAt: number
  /** How it ended: the signal it was sent, when, and its exit code or the signal that ended it. */
  end?: { readonly sent: "SIGKILL" | "SIGTERM"; readonly at: number; readonly exitCode: number | null; readonly signal: string | null }
}

export class Cluster {
  /** The current process of each slot, read by the traffic at every attempt (a dead one refuses connections). */
  readonly servers: Array<RunningServer> = []
  readonly incarnations: Array<Incarnation> = []
  private readonly up: Array<boolean> = []

  private constructor(
    private readonly database: FreshDatabase,
    readonly proxies: ReadonlyArray<PgProxy>,
    private readonly env: Record<string, string>
  ) {}

  /** One node per proxy, started one after the other (the first applies the migrations). */
  static async start(database: FreshDatabase, proxies: ReadonlyArray<PgProxy>, env: Record<string, string>): Promise<Cluster> {
    const cluster = new Cluster(database, proxies, env)
    for (let slot = 0; slot < proxies.length; slot++) await cluster.startSlot(slot)
    return cluster
  }

  private async startSlot(slot: number): Promise<void> {
    const server = await startServer({
      database: { ...this.database, url: this.proxies[slot]!.urlFor(this.database.url!) },
      env: this.env,
      expectedErrors: EXPECTED_LINES
    })
    this.servers[slot] = server
    this.up[slot] = true
    this.incarnations.push({ slot, number: this.incarnations.filter((i) => i.slot === slot).length + 1, server, startedAt: Date.now() })
  }

  /** The nodes up now (not killed, stopping or starting). */
  live(): Array<RunningServer> {
    return this.servers.filter((_, slot) => this.up[slot])
  }

  /** A node up now, at random; undefined while none is. */
  pick(): RunningServer | undefined {
    const live = this.live()
    return live[Math.floor(Math.random() * live.length)]
  }

  /** A node up, at random; waits while none is. */
  async anyLive(): Promise<RunningServer> {
    for (;;) {
      const node = this.pick()
      if (node !== undefined) return node
      await sleep(50)
    }
  }

  current(slot: number): Incarnation {
    return this.incarnations.filter((i) => i.slot === slot).at(-1)!
  }

  /** Ends the slot's process with `signal` and waits for its exit (SIGTERM: its drain; SIGKILL after 15 s). */
  async end(slot: number, signal: "SIGKILL" | "SIGTERM"): Promise<Incarnation> {
    const incarnation = this.current(slot)
    this.up[slot] = false
    // stop() also throws on error lines the process logged: they are judged at the end, with every process's
    await incarnation.server.stop(signal).catch(() => undefined)
    const child = incarnation.server.process
    incarnation.end = { sent: signal, at: Date.now(), exitCode: child.exitCode, signal: child.signalCode }
    return incarnation
  }

  /** A new process in the slot, on the same database through the same proxy: resolves once it is ready. */
  restart(slot: number): Promise<void> {
    return this.startSlot(slot)
  }

  /** Stops every node that is up (SIGTERM), one after the other. */
  async stopAll(): Promise<void> {
    for (let slot = 0; slot < this.servers.length; slot++) if (this.up[slot]) await this.end(slot, "SIGTERM")
  }

  /** Kills whatever still runs, with no wait: the clean-up after a failure or an interrupt. */
  killAll(): void {
    for (const { server } of this.incarnations) if (server.process.exitCode === null && server.process.signalCode === null) server.process.kill("SIGKILL")
  }
}
