/**
 * A TCP proxy between the service and PostgreSQL, for outage tests that must not touch the
 * machine's server: the service's DATABASE_URL points here, every connection is piped to the real
 * server, and the test can cut every connection at once (as a failover or `pg_terminate_backend`
 * does: the service's sockets are reset) and refuse new ones for a while (each is accepted and reset
 * at once, as by a server that is not up yet).
 */
import { createConnection, createServer, type Server, type Socket } from "node:net"

export interface PgProxy {
  /** `databaseUrl` with its host and port replaced by the proxy's. */
  readonly urlFor: (databaseUrl: string) => string
  /** Resets every connection open through the proxy, on both sides: how many there were. */
  readonly cut: () => number
  /** From now on, new connections are reset as soon as they are accepted. */
  readonly refuse: () => void
  /** From now on, new connections are piped to the server again. */
  readonly accept: () => void
  /** Connections open through the proxy now. */
  readonly open: () => number
  /** Connections refused so far (while `refuse` was in force). */
  readonly refused: () => number
  readonly close: () => Promise<void>
}

interface Pair {
  readonly client: Socket
  readonly server: Socket
}

/** A proxy on a free port of 127.0.0.1 to the server at `target`. */
export const startPgProxy = async (target: { readonly host: string; readonly port: number }): Promise<PgProxy> => {
  const pairs = new Set<Pair>()
  let refusing = false
  let refused = 0
  /** Ends both sides of a connection: the service's reset (`reset`), or closed as the other side closed. */
  const end = (pair: Pair, reset: boolean) => {
    if (!pairs.delete(pair)) return
    if (reset) pair.client.resetAndDestroy()
    else pair.client.destroy()
    pair.server.destroy()
  }
  const proxy: Server = createServer((client) => {
    if (refusing) {
      refused += 1
      client.on("error", () => undefined)
      client.resetAndDestroy()
      return
    }
    const server = createConnection({ host: target.host, port: target.port })
    const pair: Pair = { client, server }
    pairs.add(pair)
    // a reset or an end on either side ends both (a half-open link would hold the other side's reads)
    for (const socket of [client, server]) {
      socket.setNoDelay(true)
      socket.on("error", () => end(pair, false))
      socket.on("close", () => end(pair, false))
    }
    client.pipe(server)
    server.pipe(client)
  })
  await new Promise<void>((resolve, reject) => {
    proxy.once("error", reject)
    proxy.listen(0, "127.0.0.1", resolve)
  })
  const address = proxy.address()
  const port = typeof address === "object" && address !== null ? address.port : 0
  return {
    urlFor: (databaseUrl) => {
      const url = new URL(databaseUrl)
      url.hostname = "127.0.0.1"
      url.port = String(port)
      return url.toString()
    },
    cut: () => {
      const open = [...pairs]
      for (const pair of open) end(pair, true)
      return open.length
    },
    refuse: () => {
      refusing = true
    },
    accept: () => {
      refusing = false
    },
    open: () => pairs.size,
    refused: () => refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const pair of [...pairs]) end(pair, true)
        proxy.close(() => resolve())
      })
  }
}
