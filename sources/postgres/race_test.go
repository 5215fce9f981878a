//go:build race

package postgres_test

import "time"

// writerPause paces the tests' writer under the race detector. Unpaced,
// it outruns a change stream slowed ten-fold, and a test spends its time
// applying a backlog that grows for as long as the test runs.
const writerPause = 2 * time.Millisecond
