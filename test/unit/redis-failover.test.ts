import { isRedisFailover, ReplicasBehind } from "@cm/queue";
import { ReplyError } from "ioredis";
import { describe, expect, it } from "vitest";

// What a write is held and tried again on (libs/queue redis-failover.ts): the errors ioredis gave
// the gateway's writes in test/faults/redis-failover and redis-cluster-failover, and Redis's replies
// while a failover or a restart lasts; never an error the same write would meet again.

describe("isRedisFailover", () => {
  it("knows the connection lost or being made again, and the replies of a failover", () => {
    const lost = [
      "Connection is closed.",
      "Stream isn't writeable and enableOfflineQueue options is false",
      "Cluster isn't ready and enableOfflineQueue options is false",
      "Too many Cluster redirections. Last error: Error: Connection is closed.",
      "None of startup nodes is available",
    ].map((message) => new Error(message));
    const replies = [
      "READONLY You can't write against a read only replica.",
      "LOADING Redis is loading the dataset in memory",
      "CLUSTERDOWN The cluster is down",
      "TRYAGAIN Multiple keys request during rehashing of slot",
      "MOVED 12108 127.0.0.1:40257",
      "NOREPLICAS Not enough good replicas to write.",
    ].map((message) => new ReplyError(message));
    const retriesOut = Object.assign(new Error("Reached the max retries per request limit (which is 1)."), {
      name: "MaxRetriesPerRequestError",
    });
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:6390"), { code: "ECONNREFUSED" });
    expect([...lost, ...replies, retriesOut, refused].filter((error) => !isRedisFailover(error))).toEqual([]);
  });

  it("does not hold what trying again cannot fix, nor what was written but not confirmed", () => {
    const replies = ["OOM command not allowed when used memory > 'maxmemory'.", "ERR Error running script"];
    const others = [
      ...replies.map((message) => new ReplyError(message)),
      new ReplicasBehind("0 of the 1 Redis replicas required confirmed the write within 200 ms"),
      new Error("Command timed out"),
      "Connection is closed.",
      undefined,
    ];
    expect(others.filter((error) => isRedisFailover(error))).toEqual([]);
  });
});
