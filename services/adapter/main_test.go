package adapter_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every adapter, fake peer and gRPC server a test starts must end with
// it: a goroutine that outlives the tests fails the package.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
