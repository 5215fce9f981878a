package classify

import (
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	registryv1 "github.com/seamdata/seam/proto/seam/registry/v1"
)

// Result is the classification of a proposed contract version.
type Result struct {
	// Changes are every difference, each with its level under the mode and
	// the version it is relative to, ordered by path, rule, then version.
	Changes []*registryv1.Change
	// Breaking is true when any change is BREAKING.
	Breaking bool
}

// Classify compares proposed with the earlier versions of its subject and
// levels each change under mode. history is ordered oldest first and
// history[i] is version i+1 (versions are numbered from 1 and never
// deleted). The non-transitive modes compare with the latest version only;
// the _TRANSITIVE modes with every version, so one difference can appear
// once per version it differs from. NONE lists the changes against the
// latest version, all ADDITIVE. An empty history (a first version) has no
// changes. Nil entries in history are skipped.
func Classify(history []*contractv1.Contract, proposed *contractv1.Contract, mode contractv1.Compatibility) Result {
	if len(history) == 0 {
		return Result{}
	}
	_, _, transitive := directions(mode)
	first := len(history) - 1
	if transitive {
		first = 0
	}
	var res Result
	for i := first; i < len(history); i++ {
		if history[i] == nil {
			continue
		}
		version := int32(i + 1)
		for _, ch := range Compare(history[i], proposed) {
			ch.ComparedVersion = version
			ch.Level = Level(ch.GetRule(), mode)
			if ch.Level == registryv1.ChangeLevel_CHANGE_LEVEL_BREAKING {
				res.Breaking = true
			}
			res.Changes = append(res.Changes, ch)
		}
	}
	if transitive {
		sortChanges(res.Changes)
	}
	return res
}
