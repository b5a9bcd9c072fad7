/**
 * Two service processes ("nodes") on one PostgreSQL database, as a scaled-out deployment runs them:
 * either can be killed with SIGKILL at any moment and started again on the same database.
 */
import type { FreshDatabase } from "./database.js"
import { type RunningServer, startServer } from "./server.js"

export interface TwoNodes {
  /** The node in slot `i` (0 or 1); undefined while it is dead or starting again. */
  readonly node: (i: number) => RunningServer | undefined
  /** A live node, either one at random; waits while neither is up. */
  readonly anyLive: () => Promise<RunningServer>
  /**
   * Kills the node in slot `i` with SIGKILL and starts a new process on the same database. Its
   * output is checked as `stop` does (no ERROR line it did not expect), up to the kill.
   */
  readonly killAndRestart: (i: number) => Promise<void>
  /** Stops both nodes (SIGTERM), checking their output. */
  readonly stopAll: () => Promise<void>
  /** Kills whatever still runs (SIGKILL), with no check: the clean-up after a failure. */
  readonly killAll: () => Promise<void>
}

export const twoNodes = async (database: FreshDatabase, env: Record<string, string>): Promise<TwoNodes> => {
  const start = () => startServer({ env, database })
  // one after the other: the second finds the migrations applied
  const first = await start()
  const slots: Array<RunningServer | undefined> = [
    first,
    await start().catch(async (error) => {
      await first.stop("SIGKILL")
      throw error
    })
  ]
  const anyLive = async () => {
    for (;;) {
      const live = slots.filter((s): s is RunningServer => s !== undefined)
      if (live.length > 0) return live[Math.floor(Math.random() * live.length)]!
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  return {
    node: (i) => slots[i],
    anyLive,
    killAndRestart: async (i) => {
      const victim = slots[i]
      if (victim === undefined) throw new Error(`node ${i} is not running`)
      slots[i] = undefined
      await victim.stop("SIGKILL")
      slots[i] = await start()
    },
    stopAll: async () => {
      const live = slots.splice(0).filter((s): s is RunningServer => s !== undefined)
      await Promise.all(live.map((s) => s.stop()))
    },
    killAll: async () => {
      const live = slots.splice(0).filter((s): s is RunningServer => s !== undefined)
      await Promise.all(live.map((s) => s.stop("SIGKILL").catch(() => undefined)))
    }
  }
}
