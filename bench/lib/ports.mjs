/** Free local ports for the servers a benchmark starts, and whether a URL answers 200. */
import { createServer } from "node:net"

export const freePort = () =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })

/** `n` distinct free ports, each held until all are found (one after the other can repeat a port). */
export const freePorts = async (n) => {
  const servers = await Promise.all(Array.from({ length: n }, () =>
    new Promise((resolve, reject) => {
      const server = createServer()
      server.once("error", reject)
      server.listen(0, "127.0.0.1", () => resolve(server))
    })))
  const ports = servers.map((server) => server.address().port)
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))))
  return ports
}

export const httpOk = (url, init) => fetch(url, init).then((r) => r.arrayBuffer().then(() => r.status === 200), () => false)
