import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const NGINX = "/usr/sbin/nginx";

export interface Nginx {
  /** http://127.0.0.1:<port> of each `server`, in the order given. */
  urls: string[];
  /** nginx's error log so far (what it says about a 502). */
  errorLog(): string;
  stop(): Promise<void>;
}

/** A free loopback port (bound once and let go; nginx binds it next). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/*
 * nginx under a shell whose reader holds a pipe from this process: when this process ends in any way (even SIGKILL)
 * the pipe closes, `read` returns and nginx is told to stop, so no nginx outlives the test. The shell itself waits
 * for nginx, so an nginx that fails to start ends it at once.
 */
// (A background job's stdin is /dev/null unless redirected: the reader takes the pipe as fd 3.)
const WATCHDOG =
  'exec 3<&0; "$0" "$@" </dev/null & n=$!; (read -r _ <&3; kill -TERM $n 2>/dev/null) & wait $n';

/**
 * Debian's nginx as a child process with its own prefix, pid, logs and temp directories, one `server` per upstream
 * holding only `listen` and `proxy_pass`: every buffer and header limit is nginx's default (proxy_buffer_size: one
 * 4 KiB page for the upstream's status line and headers).
 */
export async function startNginx(upstreams: string[], ports: number[]): Promise<Nginx> {
  if (!existsSync(NGINX))
    throw new Error(`${NGINX} is missing: install it with \`apt-get update && apt-get install -y nginx\``);
  const dir = mkdtempSync(join(tmpdir(), "p402-nginx-"));
  chmodSync(dir, 0o755); // nginx's workers (another user when run as root) write proxied bodies under it
  const servers = upstreams.map(
    (upstream, i) =>
      `  server {\n    listen 127.0.0.1:${ports[i]};\n    location / {\n      proxy_pass ${upstream};\n    }\n  }`,
  );
  // Only housekeeping besides listen and proxy_pass: where this instance keeps its pid, logs and temp files.
  const conf = [
    "daemon off;",
    "worker_processes 1;",
    `pid ${dir}/nginx.pid;`,
    `error_log ${dir}/error.log;`,
    "events {}",
    "http {",
    "  access_log off;",
    ...["client_body", "proxy", "fastcgi", "uwsgi", "scgi"].map((t) => `  ${t}_temp_path ${dir}/${t};`),
    ...servers,
    "}",
  ].join("\n");
  writeFileSync(join(dir, "nginx.conf"), `${conf}\n`);
  const child: ChildProcess = spawn(
    "/bin/sh",
    ["-c", WATCHDOG, NGINX, "-p", dir, "-e", `${dir}/error.log`, "-c", `${dir}/nginx.conf`],
    { stdio: ["pipe", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr?.on("data", (c: Buffer) => {
    stderr += c.toString("utf8");
  });
  child.stdin?.on("error", () => {});
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const errorLog = () => {
    try {
      return readFileSync(join(dir, "error.log"), "utf8");
    } catch {
      return "";
    }
  };
  const stop = async () => {
    child.stdin?.end();
    const force = setTimeout(() => child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(force);
    rmSync(dir, { recursive: true, force: true });
  };
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  // Ready when every port answers; nginx that exits early (a bad config, a taken port) says why on stderr.
  const deadline = Date.now() + 15_000;
  for (const url of urls) {
    for (;;) {
      if (child.exitCode !== null) {
        const why = stderr || errorLog();
        rmSync(dir, { recursive: true, force: true });
        throw new Error(`nginx exited: ${why}`);
      }
      const up = await fetch(`${url}/openapi.json`, { method: "HEAD" }).then(
        () => true,
        () => false,
      );
      if (up) break;
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`nginx did not listen on ${url}: ${stderr || errorLog()}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { urls, errorLog, stop };
}
