//go:build race

package idmap_test

// raceEnabled scales volume tests down under the race detector.
const raceEnabled = true
