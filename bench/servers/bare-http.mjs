// The one-core ceiling for identify intake: node:http alone, parsing the same JSON body and
// answering the same reply, with no auth, validation or queue.
import { createServer } from "node:http";

const REPLY = JSON.stringify({ status: 200, message: "Success." });

const server = createServer((req, res) => {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    try {
      JSON.parse(Buffer.concat(chunks).toString("utf8"));
      res.writeHead(200, { "content-type": "application/json; charset=utf-8" });
      res.end(REPLY);
    } catch {
      res.writeHead(400).end();
    }
  });
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT), "127.0.0.1");
process.once("SIGTERM", () => server.close(() => process.exit(0)));
