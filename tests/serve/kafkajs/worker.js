// One KafkaJS consumer in its own process, for the broker tests: the JSON-lines protocol of
// tests/serve/workers/kafka_python_worker.py. argv[2]: a JSON object (bootstrap, group, topic,
// client_id, session_ms, heartbeat_ms). KafkaJS has no static membership (group.instance.id)
// and rebalances EAGER: when a rebalance starts it gives up everything ({"revoked": [...]}).
'use strict'
const readline = require('readline')
const { Kafka, logLevel } = require('kafkajs')

const config = JSON.parse(process.argv[2])
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')

async function main () {
  const kafka = new Kafka({ clientId: config.client_id, brokers: [config.bootstrap], logLevel: logLevel.NOTHING })
  const consumer = kafka.consumer({
    groupId: config.group,
    sessionTimeout: config.session_ms || 6000,
    heartbeatInterval: config.heartbeat_ms || 500,
    rebalanceTimeout: 30000,
    metadataMaxAge: 1000
  })
  let owned = []
  consumer.on(consumer.events.REBALANCING, () => {
    emit({ revoked: owned })
    owned = []
    emit({ a: owned, g: null, t: process.uptime() })
  })
  consumer.on(consumer.events.GROUP_JOIN, (event) => {
    owned = [...(event.payload.memberAssignment[config.topic] || [])].sort((x, y) => x - y)
    emit({ assigned: owned })
    emit({ a: owned, g: null, t: process.uptime() })
  })
  const lines = readline.createInterface({ input: process.stdin })
  const next = () => new Promise((resolve) => lines.once('line', resolve))
  emit({ ready: true })
  await next()
  await consumer.connect()
  await consumer.subscribe({ topics: [config.topic], fromBeginning: true })
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch, heartbeat }) => {
      if (batch.messages.length === 0) return
      const last = batch.messages[batch.messages.length - 1]
      const offset = Number(last.offset) + 1
      try {
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: String(offset) }])
        emit({ c: { [batch.partition]: offset } })
      } catch (error) { // a rebalance took the partition away first: not committed
        emit({ commit_failed: error.type || error.name })
      }
      emit({ r: batch.messages.map((m) => [batch.partition, Number(m.offset)]) })
      await heartbeat()
    }
  })
  await next()
  await consumer.disconnect()
  emit({ closed: true })
  process.exit(0)
}

main().catch((error) => {
  process.stderr.write(String(error.stack || error) + '\n')
  process.exit(1)
})
