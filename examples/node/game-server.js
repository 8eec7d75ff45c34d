// A small game server: when a game ends it publishes the result to ladder with one RPUSH,
// then blocks (BLPOP, no polling) until the worker has scored it and prints the receipt.
//
//   REDIS_URL=redis://127.0.0.1:6379/0 node game-server.js [event_id]
//
// Environment: REDIS_URL (default redis://127.0.0.1:6379/0), RECEIPT_TIMEOUT seconds to wait
// (default 2), WINNER / LOSER player ids, LADDER (default gammon42).
// Exit status: 0 with the receipt as one JSON line on stdout, 1 if none came in time or the
// event was dead-lettered.
"use strict";

const { createClient } = require("redis");

function finishedGame(eventId) {
  return {
    type: "game.finished",
    event_id: eventId,
    ladder: process.env.LADDER || "gammon42",
    ended_at: new Date(Date.now() - 1000).toISOString(),
    mode: "ranked",
    winner: { player_id: process.env.WINNER || "node-alice" },
    loser: { player_id: process.env.LOSER || "node-bob" },
    cube: 2,
    end_reason: "resign",
  };
}

async function main() {
  const eventId = process.argv[2] || `node-${process.pid}-${Date.now()}`;
  const timeout = Number(process.env.RECEIPT_TIMEOUT || "2");
  const client = createClient({ url: process.env.REDIS_URL || "redis://127.0.0.1:6379/0" });
  client.on("error", (err) => console.error(`game-server: redis: ${err.message}`));
  await client.connect();
  try {
    // 1. publish: the whole contract is one command
    await client.rPush("ladder:inbox", JSON.stringify(finishedGame(eventId)));
    // 2. wait for the receipt: the worker pushes it onto this list as it writes the boards
    const popped = await client.blPop(`ladder:receipt-wait:${eventId}`, timeout);
    if (popped === null) {
      console.error(`game-server: no receipt for ${eventId} within ${timeout} s`);
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
    return receipt.outcome === "dead_lettered" ? 1 : 0;
  } finally {
    await client.quit();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`game-server: ${err.message}`);
    process.exit(1);
  }
);
