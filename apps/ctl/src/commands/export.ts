import { once } from "node:events";
import { createWriteStream } from "node:fs";
import type { Writable } from "node:stream";
import {
  allTopicsOfProject,
  eventsOfKeys,
  findProfilePage,
  profileKeySecrets,
  userEventOf,
  type ProfileRows,
  type Sql,
  type StoredEvent,
} from "@cm/db";
import {
  type ExportedEventLine,
  type ExportedProfileLine,
  type ProfileFilter,
  type ProfileListRequest,
  type TopicStatus,
} from "@cm/domain";
import { SingleBar } from "cli-progress";
import { CliError } from "../cli-error";

/** Profiles read a page at a time: a page's statements stay short, whatever the project's size. */
const PAGE = 1_000;
const NO_FILTER: ProfileFilter = { email: null, tag: null, unsubscribed: null, updatedSince: null };

/** A profile's line: what every read shows of it, its other ids, and its topic choices by name. */
function profileLine({ id, rows, shown }: ProfileRows, topicNames: ReadonlyMap<string, string>): ExportedProfileLine {
  const topics: Record<string, TopicStatus> = {};
  for (const [topicId, status] of Object.entries(shown.visible.topics)) {
    const name = topicNames.get(topicId);
    if (name !== undefined) topics[name] = status;
  }
  return {
    type: "profile",
    id,
    previous_ids: [...new Set(rows.flatMap((row) => row.externalId ?? []))].filter((other) => other !== id).sort(),
    ...shown.fields,
    topics,
  };
}

function eventLine(userId: string, event: StoredEvent): ExportedEventLine {
  return { type: "event", user_id: userId, ...userEventOf(event) };
}

/** Writes a line, waiting while the reader is behind, so that memory stays flat however large the export. */
async function writeLine(out: Writable, line: object): Promise<void> {
  if (!out.write(`${JSON.stringify(line)}\n`)) await once(out, "drain");
}

/**
 * `ctl export --project ID [--events] [--output FILE]` (docs/bulk.md "Export"): every profile of
 * the project as one NDJSON line (ExportedProfileLine), each followed by its events with
 * `--events`, to stdout or FILE; all from one snapshot (a repeatable-read transaction), so that
 * an export taken while traffic flows is still one consistent state. A progress bar on a
 * terminal's stderr.
 */
export async function exportCommand(
  sql: Sql,
  projectId: number,
  { events, output }: { events: boolean; output: string | null },
): Promise<{ profiles: number; events: number }> {
  const secrets = await profileKeySecrets(sql, [projectId]);
  if (!secrets.has(projectId)) throw new CliError(`project ${projectId} does not exist`);
  const out = output === null ? process.stdout : createWriteStream(output);
  const exported = { profiles: 0, events: 0 };
  const bar = new SingleBar({
    stream: process.stderr,
    format: "export |{bar}| {value}/{total} rows | {rate} rows/s | ETA {eta_formatted}",
  });
  const started = Date.now();
  await sql.begin("isolation level repeatable read read only", async (tx) => {
    const [counted] = await tx<{ total: number }[]>`
      SELECT count(*)::integer AS total FROM profiles WHERE project_id = ${projectId}`;
    const total = counted?.total ?? 0;
    bar.start(total, 0, { rate: 0 });
    const topics = await allTopicsOfProject(tx, projectId);
    const topicNames = new Map(topics.map((topic) => [String(topic.id), topic.name]));
    const request: ProfileListRequest = { limit: PAGE, afterKey: null, filter: NO_FILTER };
    let read = 0;
    for (;;) {
      const page = await findProfilePage(tx, projectId, request);
      const keys = page.profiles.flatMap((profile) => profile.keys);
      const eventsOfKey = new Map<string, StoredEvent[]>();
      for (const event of events ? await eventsOfKeys(tx, projectId, keys) : []) {
        const own = eventsOfKey.get(event.user_key);
        if (own === undefined) eventsOfKey.set(event.user_key, [event]);
        else own.push(event);
      }
      for (const profile of page.profiles) {
        await writeLine(out, profileLine(profile, topicNames));
        exported.profiles += 1;
        const profileEvents = profile.keys
          .flatMap((key) => eventsOfKey.get(key) ?? [])
          .sort((a, b) => a.created_at.getTime() - b.created_at.getTime());
        for (const event of profileEvents) await writeLine(out, eventLine(profile.id, event));
        exported.events += profileEvents.length;
      }
      read += page.rowsPassed;
      bar.update(Math.min(total, read), { rate: Math.round((read * 1000) / Math.max(1, Date.now() - started)) });
      if (page.nextAfterKey === null) break;
      request.afterKey = page.nextAfterKey;
    }
  });
  bar.stop();
  if (out !== process.stdout) {
    out.end();
    await once(out, "finish");
  }
  return exported;
}
