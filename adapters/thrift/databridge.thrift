// WSO2 Data Bridge Thrift IDL (Data.thrift, Exception.thrift and the two services),
// exactly as in PROTOCOL-databridge.md sections 3.1-3.4. Names, field ids and types
// are the wire contract with stock WSO2 clients: do not rename or renumber.

// ---- Data.thrift ----

enum ThriftAttributeType {
    INT = 0,
    LONG = 1,
    FLOAT = 2,
    DOUBLE = 3,
    BOOL = 4,
    STRING = 5
}

struct ThriftAttribute {
    1: optional string name,
    2: optional ThriftAttributeType attributeType
}

struct ThriftEventBundle {
    1: optional string sessionId,
    2: optional i32 eventNum,
    3: optional list<i32> intAttributeList,
    4: optional list<i64> longAttributeList,
    5: optional list<double> doubleAttributeList,
    6: optional list<bool> boolAttributeList,
    7: optional list<string> stringAttributeList,
    8: optional map<i32, map<string, string>> arbitraryDataMapMap
}

// ---- Exception.thrift ----

exception ThriftStreamDefinitionException {
    1: required string message
}

exception ThriftNoStreamDefinitionExistException {
    1: required string message
}

exception ThriftDifferentStreamDefinitionAlreadyDefinedException {
    1: required string message
}

exception ThriftMalformedStreamDefinitionException {
    1: required string message
}

exception ThriftUndefinedEventTypeException {
    1: required string message
}

exception ThriftSessionExpiredException {
    1: required string message
}

exception ThriftAuthenticationException {
    1: required string message
}

// ---- ThriftEventTransmissionService.thrift (plain port, 7611) ----

service ThriftEventTransmissionService {
    string defineStream(1: string sessionId, 2: string streamDefinition)
        throws (1: ThriftDifferentStreamDefinitionAlreadyDefinedException ade,
                2: ThriftMalformedStreamDefinitionException mtd,
                3: ThriftStreamDefinitionException tde,
                4: ThriftSessionExpiredException se),

    string findStreamId(1: string sessionId, 2: string streamName, 3: string streamVersion)
        throws (1: ThriftNoStreamDefinitionExistException tnde,
                2: ThriftSessionExpiredException se),

    void publish(1: ThriftEventBundle eventBundle)
        throws (1: ThriftUndefinedEventTypeException ue,
                2: ThriftSessionExpiredException se),

    bool deleteStreamById(1: string sessionId, 2: string streamId)
        throws (1: ThriftSessionExpiredException se),

    bool deleteStreamByNameVersion(1: string sessionId, 2: string streamName, 3: string streamVersion)
        throws (1: ThriftSessionExpiredException se)
}

// ---- ThriftSecureEventTransmissionService.thrift (TLS port, 7711) ----

service ThriftSecureEventTransmissionService {
    string connect(1: string userName, 2: string password)
        throws (1: ThriftAuthenticationException ae),

    void disconnect(1: string sessionId),

    string defineStream(1: string sessionId, 2: string streamDefinition)
        throws (1: ThriftDifferentStreamDefinitionAlreadyDefinedException ade,
                2: ThriftMalformedStreamDefinitionException mtd,
                3: ThriftStreamDefinitionException tde,
                4: ThriftSessionExpiredException se),

    string findStreamId(1: string sessionId, 2: string streamName, 3: string streamVersion)
        throws (1: ThriftNoStreamDefinitionExistException tnde,
                2: ThriftSessionExpiredException se),

    void publish(1: ThriftEventBundle eventBundle)
        throws (1: ThriftUndefinedEventTypeException ue,
                2: ThriftSessionExpiredException se),

    bool deleteStreamById(1: string sessionId, 2: string streamId)
        throws (1: ThriftSessionExpiredException se),

    bool deleteStreamByNameVersion(1: string sessionId, 2: string streamName, 3: string streamVersion)
        throws (1: ThriftSessionExpiredException se)
}
