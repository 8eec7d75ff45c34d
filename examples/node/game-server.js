// A small game server: when a game ends it publishes the result to ladder with one RPUSH,
// then blocks (BLPOP, no polling) until the worker has scored it and prints the receipt.
//
//   REDIS_URL=redis://127.0.0.1:6379/0 node game-server.js [event_id]
//   SHAPE=draw LADDER=<a glicko2 or openskill ladder> node game-server.js [event_id]
//
// The game is a 1v1 win (SHAPE=win, the default), a draw (SHAPE=draw: result "draw" and its two
// players) or a team game (SHAPE=teams: teams, each with its rank; 1 is first, equal ranks tie).
// A ladder whose ruleset rates 1v1 wins only (gammon42, fibs, prostriker) dead-letters a draw or
// a team game as `unsupported_shape`.
//
// Safe to retry: the event is built once and kept in OUTBOX/<event_id>.json before it is sent;
// every attempt, and every later run with the same event_id, sends those exact bytes. A
// repeat is then a `duplicate` (no effect, the original's numbers), never an
// `event_id_conflict` (the same id with another content, which is dead-lettered).
//
// Environment: REDIS_URL (default redis://127.0.0.1:6379/0), PUBLISH_TIMEOUT seconds to keep
// retrying while Redis is unreachable (default 10), RECEIPT_TIMEOUT seconds to wait for the
// receipt (default 2), OUTBOX directory (default ./outbox), ENDED_AT (default: now, when the
// event is first built), WINNER / LOSER player ids (a draw's two players; a team game's first
// players of the first and second team), SHAPE (win, draw or teams), LADDER (default gammon42).
// Exit status: 0 with the receipt as one JSON line on stdout (rated, duplicate, ...), 1 if no
// receipt came in time or the event was dead-lettered, 2 if Redis stayed unreachable for
// PUBLISH_TIMEOUT (the event stays in the outbox: run again to send it).
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { createClient } = require("redis");

// The shapes of a game: each gives the fields that say who played and how it ended.
const SHAPES = {
  // a 1v1 win: first beat second
  win: (first, second) => ({
    winner: { player_id: first },
    loser: { player_id: second },
    cube: 2,
    end_reason: "resign",
  }),
  // a 1v1 draw between first and second
  draw: (first, second) => ({
    result: "draw",
    players: [{ player_id: first }, { player_id: second }],
  }),
  // a 2v2: first's team won; their team mate joined halfway (weight 0.5)
  teams: (first, second) => ({
    teams: [
      { rank: 1, players: [{ player_id: first }, { player_id: `${first}-2`, weight: 0.5 }] },
      { rank: 2, players: [{ player_id: second }, { player_id: `${second}-2` }] },
    ],
  }),
};

// The event's text, built once: the same bytes for every attempt and every run.
function eventText(eventId) {
  const dir = process.env.OUTBOX || "outbox";
  const file = path.join(dir, `${encodeURIComponent(eventId)}.json`);
  if (fs.existsSync(file)) return fs.readFileSync(file, "utf8");
  const shape = SHAPES[process.env.SHAPE || "win"]; // main() checked it
  const text = JSON.stringify({
    type: "game.finished",
    event_id: eventId,
    ladder: process.env.LADDER || "gammon42",
    ended_at: process.env.ENDED_AT || new Date().toISOString(),
    mode: "ranked",
    ...shape(process.env.WINNER || "node-alice", process.env.LOSER || "node-bob"),
  });
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(`${file}.tmp`, text);
  fs.renameSync(`${file}.tmp`, file); // whole or absent, never half written
  return text;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const eventId = process.argv[2] || `node-${process.pid}-${Date.now()}`;
  const url = process.env.REDIS_URL || "redis://127.0.0.1:6379/0";
  const publishTimeout = Number(process.env.PUBLISH_TIMEOUT || "10");
  const receiptTimeout = Number(process.env.RECEIPT_TIMEOUT || "2");
  if (!Object.hasOwn(SHAPES, process.env.SHAPE || "win")) {
    console.error("game-server: SHAPE must be win, draw or teams");
    return 2;
  }
  const text = eventText(eventId);
  const deadline = Date.now() + publishTimeout * 1000;
  let delay = 100;
  let lastError = null;
  for (;;) {
    // One connection per attempt, no reconnecting of its own: this loop is the only retry.
    const client = createClient({
      url,
      socket: { connectTimeout: 2000, reconnectStrategy: false },
    });
    client.on("error", (err) => {
      lastError = err;
    });
    try {
      await client.connect();
      // 1. publish: the whole contract is one command (sent again after a failure: a repeat
      //    of the same bytes is a duplicate, harmless)
      await client.rPush("ladder:inbox", text);
      // 2. wait for the receipt: the worker pushes it onto this list as it writes the boards
      const popped = await client.blPop(`ladder:receipt-wait:${eventId}`, receiptTimeout);
      if (popped === null) {
        console.error(`game-server: no receipt for ${eventId} within ${receiptTimeout} s`);
        return 1;
      }
      const receipt = JSON.parse(popped.element);
      console.log(JSON.stringify(receipt));
      for (const p of receipt.players) {
        const sign = p.delta >= 0 ? "+" : "";
        console.error(
          `game-server: ${p.player_id} ${p.rating_before} -> ${p.rating_after} ` +
            `(${sign}${p.delta}), rank ${p.rank_after}`
        );
      }
      console.error(`game-server: ${eventId} ${receipt.outcome}`);
      return receipt.outcome === "dead_lettered" ? 1 : 0;
    } catch (err) {
      lastError = err;
    } finally {
      if (client.isOpen) await client.quit().catch(() => {});
    }
    if (Date.now() + delay > deadline) {
      const why = lastError ? lastError.code || lastError.message : "unknown error";
      console.error(
        `game-server: gave up publishing ${eventId} after ${publishTimeout} s: ` +
          `Redis at ${url} unreachable (${why}); the event is kept in the outbox, ` +
          `run again with the same event_id to send it`
      );
      return 2;
    }
    await sleep(delay);
    delay = Math.min(delay * 2, 2000);
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`game-server: ${err.message}`);
    process.exit(1);
  }
);
