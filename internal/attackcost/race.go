//go:build race

package attackcost

const raceEnabled = true
