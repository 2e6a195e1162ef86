// Apache Kafka's own generated message classes (kafka-clients and kafka-metadata 4.4) as an oracle
// for the codec differential test (tests/codec/test_kafka_differential.py). One long-lived process:
// it reads one JSON object a line on stdin and answers each with one JSON object a line on stdout.
//
//   java -cp KAFKA_CLIENTS:KAFKA_METADATA:JACKSON MessageOracle
//
// {"op": "describe", "data": [CLASS NAME, ...]}
//     -> {"apis": [{"key", "name", "request": [lo, hi], "response": [lo, hi], "highestStable",
//                   "requestHeader": [version per API version], "responseHeader": [...]}],
//         "headers": {"RequestHeader": [lo, hi], "ResponseHeader": [lo, hi]},
//         "data": {CLASS NAME: [lo, hi] or null when the class does not exist}}
//     The versions each generated class reads and writes (unstable ones included) and the header
//     versions ApiMessageType assigns to each API version.
// {"op": "check", "kind": "request"|"response"|"header"|"data", "api": KEY, header name or class
//  name, "version": V, "cases": [{"bytes": BASE64, "json": {...}}, ...]}
//     -> {"answers": [{"reread": BASE64, "readJson": {...}, "built": BASE64}, ...]}, per case:
//     reread: BYTES read with the class's own `read` (every byte consumed) and written again;
//     readJson: what that read found, written by the class's JsonConverter (records as their size);
//     built: the message the JsonConverter builds from JSON (no bytes involved), written.
//     A case that fails answers {"error": "...", "stage": "read"|"reread"|"json"|"build"}.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;

import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

public final class MessageOracle {
    /** Doubles travel as JSON numbers, infinities as the bare words Python's json module uses. */
    static final JsonMapper MAPPER = JsonMapper.builder()
        .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
        .disable(JsonWriteFeature.WRITE_NAN_AS_STRINGS)
        .build();
    static final Map<String, Supplier<Message>> HEADERS = Map.of(
        "RequestHeader", RequestHeaderData::new,
        "ResponseHeader", ResponseHeaderData::new);
    static final Map<Class<?>, Method[]> CONVERTERS = new HashMap<>();

    static final class Failure extends Exception {
        final String stage;

        Failure(String stage, Throwable cause) {
            super(cause.getClass().getName() + ": " + cause.getMessage(), cause);
            this.stage = stage;
        }
    }

    static Message newMessage(String kind, JsonNode api) {
        return switch (kind) {
            case "request" -> ApiMessageType.fromApiKey((short) api.asInt()).newRequest();
            case "response" -> ApiMessageType.fromApiKey((short) api.asInt()).newResponse();
            case "header" -> HEADERS.get(api.asText()).get();
            case "data" -> newData(api.asText());
            default -> throw new IllegalArgumentException("unknown kind " + kind);
        };
    }

    /** A data message (a record payload, a ConsumerProtocol structure) by its class name. */
    static Message newData(String className) {
        try {
            return (Message) Class.forName(className).getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException("no message class " + className, e);
        }
    }

    /** The generated JsonConverter's read(JsonNode, short) and write(Data, short, boolean). */
    static Method[] converter(Class<?> data) throws ReflectiveOperationException {
        Method[] found = CONVERTERS.get(data);
        if (found == null) {
            Class<?> converter = Class.forName(data.getName() + "JsonConverter");
            found = new Method[] {
                converter.getMethod("read", JsonNode.class, short.class),
                converter.getMethod("write", data, short.class, boolean.class),
            };
            CONVERTERS.put(data, found);
        }
        return found;
    }

    static Object invoke(Method method, Object... args) throws Throwable {
        try {
            return method.invoke(null, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** The message's bytes at VERSION; the writer must fill exactly the size it computed. */
    static byte[] write(Message message, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = message.size(cache, version);
        ByteBuffer out = ByteBuffer.allocate(size);
        message.write(new ByteBufferAccessor(out), cache, version);
        if (out.hasRemaining()) {
            throw new IllegalStateException("wrote " + out.position() + " of the " + size + " bytes size() computed");
        }
        return out.array();
    }

    static ObjectNode check(JsonNode request) {
        String kind = request.get("kind").asText();
        short version = (short) request.get("version").asInt();
        ArrayNode answers = MAPPER.createArrayNode();
        for (JsonNode one : request.get("cases")) {
            Message read = newMessage(kind, request.get("api"));
            try {
                answers.add(checkOne(read, version, one));
            } catch (Failure e) {
                answers.addObject().put("stage", e.stage).put("error", e.getMessage());
            }
        }
        ObjectNode answer = MAPPER.createObjectNode();
        answer.set("answers", answers);
        return answer;
    }

    static ObjectNode checkOne(Message read, short version, JsonNode request) throws Failure {
        ObjectNode answer = MAPPER.createObjectNode();
        try {
            ByteBuffer in = ByteBuffer.wrap(Base64.getDecoder().decode(request.get("bytes").asText()));
            read.read(new ByteBufferAccessor(in), version);
            if (in.hasRemaining()) {
                throw new IllegalStateException(in.remaining() + " bytes left after the message");
            }
        } catch (Throwable e) {
            throw new Failure("read", e);
        }
        try {
            answer.put("reread", write(read, version));
        } catch (Throwable e) {
            throw new Failure("reread", e);
        }
        Method[] methods;
        try {
            methods = converter(read.getClass());
            answer.set("readJson", (JsonNode) invoke(methods[1], read, version, false));
        } catch (Throwable e) {
            throw new Failure("json", e);
        }
        try {
            Message built = (Message) invoke(methods[0], request.get("json"), version);
            answer.put("built", write(built, version));
        } catch (Throwable e) {
            throw new Failure("build", e);
        }
        return answer;
    }

    static ArrayNode range(int lowest, int highest) {
        return MAPPER.createArrayNode().add(lowest).add(highest);
    }

    static ObjectNode describe(JsonNode question) {
        ArrayNode apis = MAPPER.createArrayNode();
        for (ApiMessageType type : ApiMessageType.values()) {
            ObjectNode api = apis.addObject();
            api.put("key", type.apiKey());
            api.put("name", type.name);
            Message request;
            Message response;
            try {
                request = type.newRequest();
                response = type.newResponse();
            } catch (UnsupportedVersionException e) { // a key whose every version was removed
                continue;
            }
            api.set("request", range(request.lowestSupportedVersion(), request.highestSupportedVersion()));
            api.set("response", range(response.lowestSupportedVersion(), response.highestSupportedVersion()));
            api.put("highestStable", type.highestSupportedVersion(false));
            ArrayNode requestHeaders = api.putArray("requestHeader");
            ArrayNode responseHeaders = api.putArray("responseHeader");
            for (short v = type.lowestSupportedVersion(); v <= type.highestSupportedVersion(true); v++) {
                requestHeaders.add(type.requestHeaderVersion(v));
                responseHeaders.add(type.responseHeaderVersion(v));
            }
        }
        ObjectNode headers = MAPPER.createObjectNode();
        for (Map.Entry<String, Supplier<Message>> header : HEADERS.entrySet()) {
            Message message = header.getValue().get();
            headers.set(header.getKey(), range(message.lowestSupportedVersion(), message.highestSupportedVersion()));
        }
        ObjectNode data = MAPPER.createObjectNode();
        for (JsonNode name : question.path("data")) {
            try {
                Message message = newData(name.asText());
                data.set(name.asText(), range(message.lowestSupportedVersion(), message.highestSupportedVersion()));
            } catch (IllegalArgumentException e) {
                data.putNull(name.asText());
            }
        }
        ObjectNode answer = MAPPER.createObjectNode();
        answer.set("apis", apis);
        answer.set("headers", headers);
        answer.set("data", data);
        return answer;
    }

    public static void main(String[] argv) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode request = MAPPER.readTree(line);
            ObjectNode answer = switch (request.get("op").asText()) {
                case "describe" -> describe(request);
                case "check" -> check(request);
                default -> throw new IllegalArgumentException("unknown op " + request.get("op"));
            };
            out.println(MAPPER.writeValueAsString(answer));
            out.flush();
        }
    }
}
