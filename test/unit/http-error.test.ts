import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { InvalidInput } from "@cm/domain";
import { CredentialLookupsThrottled } from "../../apps/gateway/src/auth/credential-cache";
import { toApiError } from "../../apps/gateway/src/errors/http-error";
import { QueueWritesBackedUp, QueueWriteTimedOut } from "../../apps/gateway/src/micro-batcher";
import { DuplicateTopicName, NotFound, PermissionsNotHeld, QueueUnavailable, WebhookNotParked } from "@cm/app";
import { ReplicasBehind } from "@cm/queue";
import { IdempotencyKeyInFlight, IdempotencyKeyReused } from "../../apps/gateway/src/use-cases/errors";

const answer = (error: unknown) => {
  const { status, options } = toApiError(error);
  return { status, ...options };
};

describe("errors/http-error.ts", () => {
  it("answers each named error by its kind", () => {
    const problems = [{ path: "name", message: "name must not be empty" }];
    expect(answer(new NotFound("topic"))).toEqual({ status: 404, code: "not_found" });
    expect(answer(new InvalidInput(problems))).toEqual({
      status: 422,
      problems,
      detail: "name must not be empty",
    });
    const duplicate = new DuplicateTopicName("Weekly");
    expect(answer(duplicate)).toEqual({ status: 409, problems: [{ message: duplicate.message }] });
    const lacking = new PermissionsNotHeld(["campaign:write", "keys:write"]);
    expect(answer(lacking)).toEqual({ status: 403, problems: [{ path: "permissions", message: lacking.message }] });
    expect(lacking.message).toBe(
      "this key does not hold campaign:write, keys:write: a key can only create keys with permissions it holds",
    );
    const notParked = new WebhookNotParked("active");
    expect(answer(notParked)).toEqual({ status: 409, problems: [{ message: notParked.message }] });
    const inFlight = new IdempotencyKeyInFlight();
    expect(answer(inFlight)).toEqual({
      status: 409,
      detail: inFlight.message,
      problems: [{ message: inFlight.message }],
      retryAfterSeconds: 1,
    });
    const reused = new IdempotencyKeyReused();
    expect(answer(reused)).toEqual({ status: 422, problems: [{ message: reused.message }], detail: reused.message });
    for (const unavailable of [
      new QueueUnavailable(),
      new QueueWritesBackedUp("late"),
      new QueueWriteTimedOut("late"),
      new ReplicasBehind("0 of 1"),
    ]) {
      expect(answer(unavailable)).toEqual({ status: 503, code: "unavailable", retryAfterSeconds: 5 });
    }
    expect(answer(new CredentialLookupsThrottled("too many"))).toEqual({
      status: 503,
      code: "unavailable",
      detail: "too many",
      retryAfterSeconds: 1,
      shed: true,
    });
  });

  it("answers Postgres away and Redis away or failing over as unavailable, a kind it does not know and any other error as a failure", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    expect(answer(refused)).toEqual({ status: 503, code: "unavailable", retryAfterSeconds: 5 });
    // What a Redis failover or restart left a write with, once the gateway stopped holding it.
    for (const failover of [
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      new Error("Too many Cluster redirections. Last error: ReplyError: CLUSTERDOWN The cluster is down"),
      new Error("READONLY You can't write against a read only replica."),
    ]) {
      expect(answer(failover)).toEqual({ status: 503, code: "unavailable", retryAfterSeconds: 5 });
    }
    expect(answer(Object.assign(new Error("?"), { kind: "constructor" }))).toEqual({ status: 500 });
    expect(answer(new Error("bug"))).toEqual({ status: 500 });
  });

  it("imports none of the modules that raise the errors it maps", () => {
    const source = readFileSync(resolve(import.meta.dirname, "../../apps/gateway/src/errors/http-error.ts"), "utf8");
    const imports = [...source.matchAll(/from "([^"]+)"/g)].map((match) => match[1]);
    expect(imports).toEqual(["./api-error", "./error-kind"]);
  });
});
