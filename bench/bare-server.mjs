// Upper bound: a bare node:http server answering a small JSON (as ../shared/peers).
import http from "node:http";

const PORT = Number(process.env.PORT ?? 3101);
const body = JSON.stringify({ status: "ok" });
http
  .createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
      res.end(body);
    });
  })
  .listen(PORT, "127.0.0.1", () => console.log(`bare node:http on ${PORT}`));
