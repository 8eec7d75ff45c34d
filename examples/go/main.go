// A small game server in Go: when a game ends it publishes the result to ladder with one
// RPUSH, then blocks (BLPOP, no polling) until the worker has scored it and prints the receipt.
//
//	REDIS_URL=redis://127.0.0.1:6379/0 go run . [event_id]
//	SHAPE=draw LADDER=<a glicko2 or openskill ladder> go run . [event_id]
//
// The game is a 1v1 win (SHAPE=win, the default), a draw (SHAPE=draw: result "draw" and its two
// players) or a team game (SHAPE=teams: teams, each with its rank; 1 is first, equal ranks tie).
// A ladder whose ruleset rates 1v1 wins only (gammon42, fibs, prostriker) dead-letters a draw or
// a team game as `unsupported_shape`.
//
// Safe to retry: the event is built once and kept in OUTBOX/<event_id>.json before it is sent;
// every attempt, and every later run with the same event_id, sends those exact bytes. A repeat
// is then a `duplicate` (no effect, the original's numbers), never an `event_id_conflict` (the
// same id with another content, which is dead-lettered).
//
// Environment: REDIS_URL (default redis://127.0.0.1:6379/0), PUBLISH_TIMEOUT seconds to keep
// retrying while Redis is unreachable (default 10), RECEIPT_TIMEOUT seconds to wait for the
// receipt (default 2), OUTBOX directory (default ./outbox), ENDED_AT (default: now, when the
// event is first built), WINNER / LOSER player ids (a draw's two players; a team game's first
// players of the first and second team), SHAPE (win, draw or teams), LADDER (default gammon42).
// Exit status: 0 with the receipt as one JSON line on stdout (rated, duplicate, ...), 1 if no
// receipt came in time or the event was dead-lettered, 2 if Redis stayed unreachable for
// PUBLISH_TIMEOUT (the event stays in the outbox: run again to send it).
package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"
)

type player struct {
	PlayerID string `json:"player_id"`
	// Weight is a team game's share of the game played (partial play); left out, 1.
	Weight float64 `json:"weight,omitempty"`
}

type team struct {
	Rank    int      `json:"rank"`
	Players []player `json:"players"`
}

// gameFinished is one of three shapes: a 1v1 win (Winner, Loser), a draw (Result "draw",
// Players) or a team game (Teams). The other shapes' fields are left out of the JSON.
type gameFinished struct {
	Type      string   `json:"type"`
	EventID   string   `json:"event_id"`
	Ladder    string   `json:"ladder"`
	EndedAt   string   `json:"ended_at"`
	Mode      string   `json:"mode"`
	Winner    *player  `json:"winner,omitempty"`
	Loser     *player  `json:"loser,omitempty"`
	Cube      int      `json:"cube,omitempty"`
	Result    string   `json:"result,omitempty"`
	EndReason string   `json:"end_reason,omitempty"`
	Players   []player `json:"players,omitempty"`
	Teams     []team   `json:"teams,omitempty"`
}

// shapes fill in who played and how it ended.
var shapes = map[string]func(game *gameFinished, first, second string){
	// a 1v1 win: first beat second
	"win": func(game *gameFinished, first, second string) {
		game.Winner, game.Loser = &player{PlayerID: first}, &player{PlayerID: second}
		game.Cube, game.EndReason = 2, "resign"
	},
	// a 1v1 draw between first and second
	"draw": func(game *gameFinished, first, second string) {
		game.Result = "draw"
		game.Players = []player{{PlayerID: first}, {PlayerID: second}}
	},
	// a 2v2: first's team won; their team mate joined halfway (weight 0.5)
	"teams": func(game *gameFinished, first, second string) {
		game.Teams = []team{
			{Rank: 1, Players: []player{{PlayerID: first}, {PlayerID: first + "-2", Weight: 0.5}}},
			{Rank: 2, Players: []player{{PlayerID: second}, {PlayerID: second + "-2"}}},
		}
	},
}

type receipt struct {
	EventID string `json:"event_id"`
	Outcome string `json:"outcome"`
	Players []struct {
		PlayerID     string  `json:"player_id"`
		RatingBefore float64 `json:"rating_before"`
		RatingAfter  float64 `json:"rating_after"`
		Delta        float64 `json:"delta"`
		RankAfter    *int    `json:"rank_after"`
	} `json:"players"`
}

func env(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

func seconds(name, fallback string) float64 {
	value, err := strconv.ParseFloat(env(name, fallback), 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "game-server: %s must be a number of seconds\n", name)
		os.Exit(2)
	}
	return value
}

// eventText is the event's text, built once: the same bytes for every attempt and every run.
func eventText(eventID string) ([]byte, error) {
	dir := env("OUTBOX", "outbox")
	file := filepath.Join(dir, url.PathEscape(eventID)+".json")
	if text, err := os.ReadFile(file); err == nil {
		return text, nil
	}
	game := gameFinished{
		Type:    "game.finished",
		EventID: eventID,
		Ladder:  env("LADDER", "gammon42"),
		EndedAt: env("ENDED_AT", time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")),
		Mode:    "ranked",
	}
	shapes[env("SHAPE", "win")](&game, env("WINNER", "go-alice"), env("LOSER", "go-bob")) // run() checked it
	text, err := json.Marshal(game)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(file+".tmp", text, 0o644); err != nil {
		return nil, err
	}
	return text, os.Rename(file+".tmp", file) // whole or absent, never half written
}

// publishAndWait sends the event and waits for its receipt on one connection; nil, nil when no
// receipt came within the wait.
func publishAndWait(redisURL string, eventID string, text []byte, wait float64) ([]byte, error) {
	conn, err := redis.DialURL(redisURL,
		redis.DialConnectTimeout(2*time.Second),
		redis.DialReadTimeout(time.Duration((wait+5)*float64(time.Second))))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// 1. publish: the whole contract is one command (sent again after a failure: a repeat of
	//    the same bytes is a duplicate, harmless)
	if _, err := conn.Do("RPUSH", "ladder:inbox", text); err != nil {
		return nil, err
	}
	// 2. wait for the receipt: the worker pushes it onto this list as it scores the event
	popped, err := redis.ByteSlices(conn.Do("BLPOP", "ladder:receipt-wait:"+eventID, wait))
	if err == redis.ErrNil {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return popped[1], nil
}

func run() int {
	eventID := fmt.Sprintf("go-%d-%d", os.Getpid(), time.Now().UnixNano())
	if len(os.Args) > 1 {
		eventID = os.Args[1]
	}
	redisURL := env("REDIS_URL", "redis://127.0.0.1:6379/0")
	publishTimeout := seconds("PUBLISH_TIMEOUT", "10")
	receiptTimeout := seconds("RECEIPT_TIMEOUT", "2")
	if _, known := shapes[env("SHAPE", "win")]; !known {
		fmt.Fprintln(os.Stderr, "game-server: SHAPE must be win, draw or teams")
		return 2
	}
	text, err := eventText(eventID)
	if err != nil {
		fmt.Fprintf(os.Stderr, "game-server: cannot keep the event in the outbox: %v\n", err)
		return 2
	}
	deadline := time.Now().Add(time.Duration(publishTimeout * float64(time.Second)))
	delay := 100 * time.Millisecond
	for {
		body, err := publishAndWait(redisURL, eventID, text, receiptTimeout)
		if err == nil && body == nil {
			fmt.Fprintf(os.Stderr, "game-server: no receipt for %s within %g s\n", eventID, receiptTimeout)
			return 1
		}
		if err == nil {
			var got receipt
			if err := json.Unmarshal(body, &got); err != nil {
				fmt.Fprintf(os.Stderr, "game-server: the receipt is not JSON: %v\n", err)
				return 1
			}
			fmt.Println(string(body))
			for _, p := range got.Players {
				rank := "null"
				if p.RankAfter != nil {
					rank = strconv.Itoa(*p.RankAfter)
				}
				fmt.Fprintf(os.Stderr, "game-server: %s %g -> %g (%+g), rank %s\n",
					p.PlayerID, p.RatingBefore, p.RatingAfter, p.Delta, rank)
			}
			fmt.Fprintf(os.Stderr, "game-server: %s %s\n", eventID, got.Outcome)
			if got.Outcome == "dead_lettered" {
				return 1
			}
			return 0
		}
		if time.Now().Add(delay).After(deadline) {
			fmt.Fprintf(os.Stderr, "game-server: gave up publishing %s after %g s: Redis at %s "+
				"unreachable (%v); the event is kept in the outbox, run again with the same "+
				"event_id to send it\n", eventID, publishTimeout, redisURL, err)
			return 2
		}
		time.Sleep(delay)
		if delay *= 2; delay > 2*time.Second {
			delay = 2 * time.Second
		}
	}
}

func main() {
	os.Exit(run())
}
