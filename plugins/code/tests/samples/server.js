import http from "node:http";

// Answer every request with the same greeting.
function greet(name) {
  return `hello ${name}`;
}

export class Server {
  constructor(port) {
    this.port = port;
  }

  listen() {
    return http.createServer(() => greet("world")).listen(this.port);
  }
}

const shutdown = (server) => server.close();
