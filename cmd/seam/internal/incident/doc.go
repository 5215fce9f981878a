// Package incident is the model behind `seam incident`: one incident on a
// source (what changed since which partition, what the gate holds, who is
// affected, the proposed version and identifier migrations, the dry run),
// the steps that fix it, carried out and reconciled. command/incident
// prints it; the console reads it through incident/rest.
package incident
