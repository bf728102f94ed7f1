// The local twin's IAM policy evaluator: @cloud-copilot/iam-simulate behind one HTTP endpoint on
// loopback. POST / with a Simulation (iam-simulate's input) answers
// {"decision": "Allowed" | "ExplicitlyDenied" | "ImplicitlyDenied", "denials": [...]} or
// {"error": {...}} when the request is not one iam-simulate can evaluate (unknown action, a
// resource ARN the action does not take, a context key the action does not know).
// The port is printed on stdout as the first line once the server listens; it serves until its
// stdin closes (so it also ends when the runtime that started it dies).
import http from 'node:http'
import { getDenialReasons, runSimulation } from '@cloud-copilot/iam-simulate'

// Answers by request body; bounded, as the bodies differ per DynamoDB partition key where a
// policy tests dynamodb:LeadingKeys (one per WebSocket connection record).
const answers = new Map()
const MAX_ANSWERS = 10000

async function decide(body) {
  const known = answers.get(body)
  if (known !== undefined) return known
  const result = await runSimulation(JSON.parse(body), { simulationMode: 'Strict' })
  const answer =
    result.resultType === 'single'
      ? { decision: result.overallResult, denials: denials(result.result.analysis) }
      : { error: result.resultType === 'error' ? result.errors : { message: 'wildcard resource' } }
  if (answers.size >= MAX_ANSWERS) answers.clear()
  answers.set(body, answer)
  return answer
}

function denials(analysis) {
  if (analysis === undefined || analysis.result === 'Allowed') return []
  return getDenialReasons(analysis)
}

const server = http.createServer((request, response) => {
  const chunks = []
  request.on('data', (chunk) => chunks.push(chunk))
  request.on('end', () => {
    decide(Buffer.concat(chunks).toString('utf8'))
      .catch((failure) => ({ error: { message: String(failure) } }))
      .then((answer) => {
        response.writeHead(200, { 'content-type': 'application/json' })
        response.end(JSON.stringify(answer))
      })
  })
})
server.keepAliveTimeout = 0
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${server.address().port}\n`)
})
process.stdin.on('end', () => process.exit(0))
process.stdin.resume()
