package storage_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The store starts goroutines (LISTEN pumps on PostgreSQL); every one must
// end with its context.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
