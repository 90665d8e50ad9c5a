package migrate

import "testing"

func TestIsSinkByTopicsExceptKnownSources(t *testing.T) {
	for _, c := range []struct {
		cfg  map[string]string
		sink bool
	}{
		{map[string]string{"connector.class": "FileStreamSink", "topics": "a"}, true},
		{map[string]string{"connector.class": "x.Sink", "topics.regex": "a.*"}, true},
		{map[string]string{"connector.class": "FileStreamSource", "topic": "a"}, false},
		{map[string]string{"connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector", "topics": "a"}, false},
		{map[string]string{"connector.class": "MirrorSource", "topics": "a"}, false},
	} {
		if got := (&Connector{Config: c.cfg}).IsSink(); got != c.sink {
			t.Errorf("IsSink(%v) = %v, want %v", c.cfg, got, c.sink)
		}
	}
}
