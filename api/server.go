package api

// ServerInfo is the body of GET /, as in Kafka Connect.
type ServerInfo struct {
	Version        string `json:"version"`
	Commit         string `json:"commit"`
	KafkaClusterID string `json:"kafka_cluster_id"`
}

// WorkerStatus is the body of GET /health, as in Kafka Connect (KIP-1017).
type WorkerStatus struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// VersionInfo is the body of GET /kcd/v1/version.
type VersionInfo struct {
	Version           string `json:"version"`
	Commit            string `json:"commit"`
	GoVersion         string `json:"go_version"`
	ConnectAPIVersion string `json:"connect_api_version"`
}

// ErrorMessage is Kafka Connect's error body, used for every error kcd's REST
// API returns, on Kafka Connect's paths and on /kcd/v1 alike.
type ErrorMessage struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}
