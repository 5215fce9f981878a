// Command seam runs Seam's services and is the client for source teams,
// pipelines and operators. `seam up` runs all four services in one process
// on the embedded store; `seam <service> serve` runs one.
package main

import (
	"context"
	"os"
)

func main() { os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)) }
