// Package incident is the model behind `seam incident`: it gathers one
// incident on a source (what changed and since which partition, what the
// gate holds, who is affected, the proposed next version and identifier
// migrations, the dry run), plans the steps that fix it, carries them out
// and reconciles the window afterwards. The command in
// cmd/seam/internal/command/incident prints it.
package incident
