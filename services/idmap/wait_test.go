package idmap_test

import "time"

func waitABit() { time.Sleep(50 * time.Millisecond) }
