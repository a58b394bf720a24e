// One load generator for one gateway, run by bench/scale.mjs as its own process, so that the load
// grows with the gateways it drives (one autocannon for all of them saturates its process first).
// Prints "ready" once started up, begins when its stdin ends (together with the point's other load
// generators), then prints the run's summary (lib.mjs summarize) as JSON.
// Usage: node bench/intake-load.mjs URL CONNECTIONS DURATION_S
import { once } from "node:events";
import { intake } from "./lib.mjs";

const [url, connections, duration] = process.argv.slice(2);
console.log("ready");
await once(process.stdin.resume(), "end");
console.log(JSON.stringify(await intake(url, "", Number(connections), Number(duration))));
