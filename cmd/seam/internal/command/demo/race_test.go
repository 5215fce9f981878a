//go:build race

package demo

// testPerDay is the drill's orders a day in these tests: fewer under the
// race detector, which runs the same code paths ten times slower.
const testPerDay = 1000
