module ladder.example/gameserver

go 1.19

require github.com/gomodule/redigo v1.8.3

// The Go client from Debian's golang-github-gomodule-redigo-dev (apt-get install
// golang-github-gomodule-redigo-dev). With the Go module proxy reachable, delete this line
// and run `go mod tidy` to fetch the same version instead.
replace github.com/gomodule/redigo => /usr/share/gocode/src/github.com/gomodule/redigo
