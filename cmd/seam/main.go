// Command seam runs Seam's services and is the client for source teams,
// pipelines and operators. `seam up` runs all four services in one process
// on the embedded store; `seam <service> serve` runs one. The commands
// live in internal/command; see README.md beside this file.
package main

import (
	"context"
	"os"

	"github.com/seamdata/seam/cmd/seam/internal/cli"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	os.Exit(cli.Run(context.Background(), os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Version: version}))
}
