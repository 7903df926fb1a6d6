"""Every Kafka client the framework makes, the names it gives things, its topic helpers.

- `names`: transactional ids, consumer groups, control and dead-letter topics;
- `clients`: the settings of each kind of client, and the clients built from them;
- `admin`: creating topics, partition counts, end offsets.
"""

from laminar_kafka.kafka.clients import KafkaConnection
from laminar_kafka.kafka.names import PartitionKey

__all__ = ["KafkaConnection", "PartitionKey"]
