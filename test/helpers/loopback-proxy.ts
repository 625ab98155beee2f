import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

export interface LoopbackProxy {
  url: string;
  /** Destroys every open connection (replies a test holds included), then stops listening. */
  close(): Promise<void>;
}

/** An HTTP server on 127.0.0.1 whose every request `handle` answers (or holds): a facilitator the test controls. */
export async function startLoopbackProxy(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): Promise<LoopbackProxy> {
  const sockets = new Set<Socket>();
  const proxy = createServer((req, res) => void handle(req, res));
  proxy.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => proxy.close(r));
    },
  };
}
