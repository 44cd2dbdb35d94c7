package cluster

// DefaultPrefix is the first token of every troupe subject.
const DefaultPrefix = "troupe"
