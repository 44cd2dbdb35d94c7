package watch

import (
	"github.com/prometheus/client_golang/prometheus"
)

// statsCollector exports a Monitor's figures at each scrape: the task
// queue's depth and the registry's live nodes. It reads what the monitor
// last read, so a scrape never waits on NATS; a figure the monitor could
// not read is left out rather than shown as 0.
type statsCollector struct {
	stats                     func() Stats
	depth, nodes, slots, free *prometheus.Desc
}

func newStatsCollector(stats func() Stats) *statsCollector {
	return &statsCollector{stats: stats,
		depth: prometheus.NewDesc("troupe_queue_depth",
			"Agent tasks in the task queue: waiting for a node, or taken by one and not yet finished.", nil, nil),
		nodes: prometheus.NewDesc("troupe_nodes", "Live worker nodes in the node registry.", nil, nil),
		slots: prometheus.NewDesc("troupe_node_slots", "Task slots of a live node, by node ID.", []string{"node"}, nil),
		free:  prometheus.NewDesc("troupe_node_free_slots", "Task slots of a live node not taken by a task, by node ID (as the node reports them).", []string{"node"}, nil),
	}
}

// Describe sends the descriptions of the collector's metrics.
func (c *statsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.depth
	ch <- c.nodes
	ch <- c.slots
	ch <- c.free
}

// Collect sends the monitor's latest figures. Past maxLabelValues nodes
// (the registry is written by nodes), the rest are summed under "other".
func (c *statsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	if s.QueueDepth != nil {
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(*s.QueueDepth))
	}
	if s.Nodes == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.nodes, prometheus.GaugeValue, float64(len(s.Nodes)))
	var otherSlots, otherFree int
	for i, n := range s.Nodes {
		if i >= maxLabelValues {
			otherSlots += n.Slots
			otherFree += n.Free
			continue
		}
		ch <- prometheus.MustNewConstMetric(c.slots, prometheus.GaugeValue, float64(n.Slots), n.ID)
		ch <- prometheus.MustNewConstMetric(c.free, prometheus.GaugeValue, float64(n.Free), n.ID)
	}
	if len(s.Nodes) > maxLabelValues {
		ch <- prometheus.MustNewConstMetric(c.slots, prometheus.GaugeValue, float64(otherSlots), otherLabel)
		ch <- prometheus.MustNewConstMetric(c.free, prometheus.GaugeValue, float64(otherFree), otherLabel)
	}
}
