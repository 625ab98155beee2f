import type { Duplex } from "node:stream";
import type {
  FastifyError,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  preHandlerHookHandler,
} from "fastify";

/** RFC 9457 problem details. `errors` lists each invalid field with a JSON pointer into the part it came from. */
export interface FieldError {
  in: "body" | "query" | "header" | "params";
  pointer: string;
  detail: string;
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  errors?: FieldError[];
  [extension: string]: unknown;
}

export const PROBLEM_CONTENT_TYPE = "application/problem+json; charset=utf-8";
/** Relative (RFC 9457 §3.1.1): resolves against the serving origin, where /problems/<slug> explains each type. */
const TYPE_BASE = "/problems/";

const TITLES: Record<number, string> = {
  400: "Bad Request",
  402: "Payment Required",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  408: "Request Timeout",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  431: "Request Header Fields Too Large",
  422: "Unprocessable Content",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

export function problem(
  status: number,
  slug: string,
  detail: string,
  instance: string,
  extra: Partial<Problem> = {},
): Problem {
  return {
    type: `${TYPE_BASE}${slug}`,
    title: TITLES[status] ?? "Error",
    status,
    detail,
    instance,
    ...extra,
  };
}

/** The problem's `instance`: the request path, without the query (which may carry client data). */
export const problemInstance = (request: FastifyRequest): string => {
  const q = request.url.indexOf("?");
  return q < 0 ? request.url : request.url.slice(0, q);
};

export function sendProblem(
  reply: FastifyReply,
  p: Problem,
  headers: Record<string, string> = {},
): FastifyReply {
  return reply.code(p.status).headers(headers).type(PROBLEM_CONTENT_TYPE).send(p);
}

/** An error a route or plugin throws on purpose: becomes a problem+json answer with the given status. */
export class HttpProblem extends Error {
  constructor(
    readonly status: number,
    readonly slug: string,
    detail: string,
    readonly headers: Record<string, string> = {},
    readonly extra: Partial<Problem> = {},
  ) {
    super(detail);
  }
}

/** The problem an HttpProblem stands for, answered at `instance` (its headers stay on the error). */
export const problemOf = (err: HttpProblem, instance: string): Problem =>
  problem(err.status, err.slug, err.message, instance, err.extra);

const PARTS: Record<string, FieldError["in"]> = {
  body: "body",
  querystring: "query",
  headers: "header",
  params: "params",
};

export interface AjvLikeError {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

export function fieldErrors(validation: AjvLikeError[], context: string | undefined): FieldError[] {
  const part = PARTS[context ?? "body"] ?? "body";
  const out: FieldError[] = [];
  for (const e of validation) {
    let pointer = e.instancePath ?? "";
    let detail = e.message ?? "is invalid";
    if (e.keyword === "required" && typeof e.params?.missingProperty === "string") {
      pointer = `${pointer}/${e.params.missingProperty}`;
      detail = "is required";
    } else if (e.keyword === "additionalProperties" && typeof e.params?.additionalProperty === "string") {
      pointer = `${pointer}/${e.params.additionalProperty}`;
      detail = part === "query" ? "is not a known query parameter" : "is not an allowed field";
    }
    // Header names are case-insensitive; report them as clients write them.
    if (part === "header") pointer = pointer.replace(/^\/([a-z-]+)/, (_, h: string) => `/${h}`);
    out.push({ in: part, pointer: pointer || "/", detail });
  }
  return dedupe(out);
}

/** The 400 of a request that fails its schema: every invalid field named, in the part (`context`) it came from. */
export function validationProblem(
  validation: AjvLikeError[],
  context: string | undefined,
  instance: string,
): Problem {
  const errors = fieldErrors(validation, context);
  const summary = errors.map((e) => `${e.in} ${e.pointer} ${e.detail}`).join("; ");
  return problem(400, "invalid-request", `The request is invalid: ${summary}`, instance, { errors });
}

function dedupe(errors: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return errors.filter((e) => {
    const key = `${e.in}${e.pointer}${e.detail}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * The one error handler: everything leaves as problem+json, validation errors name each field, and a 5xx never
 * carries a stack or an internal message.
 */
export function registerProblemHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | HttpProblem, request: FastifyRequest, reply: FastifyReply) => {
    const instance = problemInstance(request);
    if (error instanceof HttpProblem) {
      return sendProblem(reply, problemOf(error, instance), error.headers);
    }
    if (error.validation)
      return sendProblem(
        reply,
        validationProblem(error.validation as AjvLikeError[], error.validationContext, instance),
      );
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      const slug = (error.code ?? "client-error")
        .toLowerCase()
        .replace(/^fst_err_/, "")
        .replace(/_/g, "-");
      return sendProblem(reply, problem(status, slug, error.message, instance));
    }
    if (error.code === "FST_UNDER_PRESSURE")
      return sendProblem(
        reply,
        problem(503, "overloaded", "The server is overloaded; retry shortly.", instance),
      );
    request.log.error({ err: error }, "unhandled error");
    const safeStatus = status >= 500 && status < 600 ? status : 500;
    return sendProblem(
      reply,
      problem(safeStatus, "internal", "The server failed to answer this request.", instance),
    );
  });

  // Unknown paths (scanners) go through the same per-client limit as every route when a rate limiter is there.
  const limited = (app as { rateLimit?: () => preHandlerHookHandler }).rateLimit;
  app.setNotFoundHandler(limited ? { preHandler: limited() } : {}, (request, reply) => {
    const instance = problemInstance(request);
    return sendProblem(reply, problem(404, "not-found", `No route ${request.method} ${instance}.`, instance));
  });
}

/**
 * Node-level rejections (a bad request line, headers too large, a request timeout) happen before Fastify has a request
 * or a reply: this writes them to the socket as problem+json too, like every other error the server emits.
 */
export function clientErrorProblem(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const [status, slug, detail] =
    err.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? [408, "request-timeout", "The request was not received in time."]
      : err.code === "HPE_HEADER_OVERFLOW"
        ? [431, "headers-too-large", "The request headers are too large."]
        : [400, "bad-request", "The request is not valid HTTP."];
  const body = JSON.stringify(problem(status, slug, detail, "/"));
  if (socket.writable)
    socket.write(
      `HTTP/1.1 ${status} ${TITLES[status] ?? "Error"}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  socket.destroy(err);
}
