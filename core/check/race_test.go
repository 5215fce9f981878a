//go:build race

package check_test

// raceEnabled is set under the race detector, whose sync.Pool drops a
// quarter of what it is given back: allocation figures mean nothing then.
const raceEnabled = true
