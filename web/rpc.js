// JSON-RPC 2.0 over the server's own WebSocket, reconnecting with backoff. The page is a
// client like any other: it uses only the public protocol (docs/protocol.md).

/** An error answer from the server: `code`, `message` and `data.kind`. */
export class RpcError extends Error {
  constructor(error) {
    super(error.message || "error");
    this.code = error.code;
    this.data = error.data || {};
  }
}

/**
 * A connection that reconnects by itself; `onopen` runs after every (re)connect. With
 * `connect: false` it waits for `reconnect()` (a page that must ask for a token first).
 */
export class Connection {
  constructor(url, { onopen, onnotify, onstate }, { connect = true } = {}) {
    this.url = url;
    this.onopen = onopen;
    this.onnotify = onnotify;
    this.onstate = onstate;
    this.next = 1;
    this.pending = new Map();
    this.delay = 250;
    this.stopped = !connect;
    if (connect) this.connect();
  }

  connect() {
    this.onstate("connecting");
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.addEventListener("open", async () => {
      this.delay = 250;
      this.onstate("open");
      try {
        await this.onopen();
      } catch (e) {
        console.warn("after connecting:", e);
      }
    });
    ws.addEventListener("message", (ev) => this.receive(ev.data));
    ws.addEventListener("close", (ev) => {
      for (const { reject } of this.pending.values()) reject(new RpcError({ code: -1, message: "connection lost" }));
      this.pending.clear();
      if (this.ws !== ws) return;
      this.onstate("closed", ev.code);
      if (!this.stopped) {
        setTimeout(() => this.connect(), this.delay);
        this.delay = Math.min(this.delay * 2, 5000);
      }
    });
  }

  receive(text) {
    let messages;
    try {
      messages = JSON.parse(text);
    } catch {
      return;
    }
    for (const msg of Array.isArray(messages) ? messages : [messages]) {
      if (msg.id !== undefined && msg.id !== null && this.pending.has(msg.id)) {
        const { resolve, reject } = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        if (msg.error) reject(new RpcError(msg.error));
        else resolve(msg.result);
      } else if (msg.method) {
        this.onnotify(msg.method, msg.params || {});
      }
    }
  }

  /** Calls a method; answers its result or throws an RpcError. */
  call(method, params = {}) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) {
      return Promise.reject(new RpcError({ code: -1, message: "not connected" }));
    }
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }

  /** Drops the socket and connects again (after a sign-in, with the new token). */
  reconnect() {
    const old = this.ws;
    this.ws = null;
    if (old) old.close();
    this.delay = 250;
    this.connect();
  }
}

/** The server's WebSocket, on the page's own host. */
export function socketUrl(location) {
  return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`;
}
