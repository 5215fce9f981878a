package main

import (
	"testing"

	"go.uber.org/goleak"
)

// The commands start goroutines (servers, workers, progress); every one
// must end with its command.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
