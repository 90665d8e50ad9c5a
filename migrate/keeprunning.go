package migrate

// KeepRunning sets back to STARTED the target state of the connectors of
// c named in stopped, those StopRunning stopped on the live cluster: they
// ran there until they were stopped so that their offsets were final when
// read, and they are to run on in kcd. The stop also emptied their task
// configs on Kafka Connect, so kcd generates them. A connector of c that
// is not STOPPED (someone changed it since) is left as it is.
func KeepRunning(c *Cluster, stopped []string) {
	set := make(map[string]bool, len(stopped))
	for _, n := range stopped {
		set[n] = true
	}
	for _, conn := range c.Connectors {
		if set[conn.Name] && conn.Target == "STOPPED" {
			conn.Target = "STARTED"
		}
	}
}
