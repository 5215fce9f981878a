package idmap_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The server follows committed changes in a goroutine; Close must end it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
