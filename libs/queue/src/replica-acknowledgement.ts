import type { Redis } from "ioredis";
import { isCluster, primaryServing, type RedisConnection } from "./redis-nodes";

/**
 * Fewer replicas than required confirmed a write in time. The write is on the primary and may
 * still be applied (a 503 does not promise otherwise); it was not acknowledged, since a failover
 * now could lose it.
 */
export class ReplicasBehind extends Error {
  readonly kind = "replicas_behind";
}

/**
 * Redis WAIT for the writes of one connection (WAIT counts the replication offset of the writes
 * its own connection sent before it), one WAIT at a time: a WAIT blocks its connection, so the
 * writers whose write landed while one was in flight share the next, which covers them all.
 */
export class ReplicaAcknowledgement {
  /** The WAIT sent, and the one that follows it for the writes that landed meanwhile. */
  private sent: Promise<number> | null = null;
  private next: Promise<number> | null = null;

  constructor(
    private readonly redis: Redis,
    readonly replicas: number,
    readonly timeoutMs: number,
  ) {}

  /** Resolves once every write this connection answered before the call is on `replicas` replicas. */
  async confirm(): Promise<void> {
    const confirmed = await this.waitCoveringNow();
    if (confirmed < this.replicas) {
      throw new ReplicasBehind(
        `${confirmed} of the ${this.replicas} Redis replicas required confirmed the write within ${this.timeoutMs} ms`,
      );
    }
  }

  private waitCoveringNow(): Promise<number> {
    if (this.sent === null) return this.send();
    // The WAIT in flight may have been sent before this write: the next one is sent after it.
    this.next ??= this.sent.then(
      () => this.sendNext(),
      () => this.sendNext(),
    );
    return this.next;
  }

  private sendNext(): Promise<number> {
    this.next = null;
    return this.send();
  }

  private send(): Promise<number> {
    const sent = this.redis.wait(this.replicas, this.timeoutMs);
    this.sent = sent;
    const settled = () => {
      if (this.sent === sent) this.sent = null;
    };
    sent.then(settled, settled);
    return sent;
  }
}

/**
 * The acknowledgement that covers a write of `key` on each producer connection made to wait for
 * replicas (producerConnection): the connection's own, or on a cluster that of the connection to
 * the primary serving the key's slot (a WAIT counts the writes of the connection it is sent on,
 * and each node replicates its own writes), undefined when the cluster knows of none.
 */
const ACKNOWLEDGEMENTS = new WeakMap<object, (key: string) => ReplicaAcknowledgement | undefined>();

/** From now on, writes on this connection that ask (replicasAcknowledged) wait for that many replicas. */
export function acknowledgeWrites(connection: RedisConnection, replicas: number, timeoutMs: number): void {
  if (replicas === 0) return;
  if (!isCluster(connection)) {
    const acknowledgement = new ReplicaAcknowledgement(connection, replicas, timeoutMs);
    ACKNOWLEDGEMENTS.set(connection, () => acknowledgement);
    return;
  }
  const byPrimary = new WeakMap<Redis, ReplicaAcknowledgement>();
  ACKNOWLEDGEMENTS.set(connection, (key) => {
    const primary = primaryServing(connection, key);
    if (primary === undefined) return undefined;
    let acknowledgement = byPrimary.get(primary);
    if (acknowledgement === undefined) {
      acknowledgement = new ReplicaAcknowledgement(primary, replicas, timeoutMs);
      byPrimary.set(primary, acknowledgement);
    }
    return acknowledgement;
  });
}

/**
 * After a job write of `key` (any key of its queue): resolves once the writes of its connection
 * are on the replicas that connection was made to wait for (at once when none), throws
 * ReplicasBehind when fewer confirm in time. `connection`: the ioredis client the write went
 * through (a queue's `opts.connection`).
 */
export function replicasAcknowledged(connection: object, key: string): Promise<void> {
  const acknowledgementOf = ACKNOWLEDGEMENTS.get(connection);
  if (acknowledgementOf === undefined) return Promise.resolve();
  const acknowledgement = acknowledgementOf(key);
  if (acknowledgement === undefined) {
    return Promise.reject(
      new ReplicasBehind(`no Redis Cluster node is known to serve ${key}: the write is not confirmed`),
    );
  }
  return acknowledgement.confirm();
}
