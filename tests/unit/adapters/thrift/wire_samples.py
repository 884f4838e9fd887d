"""Hand-built bytes of PROTOCOL §6.3 and the pizza definitions of §6.3, §6.4 and §11."""

from __future__ import annotations

SESSION = "c0ffee00-1234-4abc-8def-0123456789ab"

PUBLISH_CALL = bytes.fromhex(
    """
    80 01 00 01 00 00 00 07 70 75 62 6c 69 73 68 00
    00 00 01 0c 00 01 0b 00 01 00 00 00 24 63 30 66
    66 65 65 30 30 2d 31 32 33 34 2d 34 61 62 63 2d
    38 64 65 66 2d 30 31 32 33 34 35 36 37 38 39 61
    62 08 00 02 00 00 00 02 0f 00 03 08 00 00 00 02
    00 00 03 e9 00 00 03 ea 0f 00 04 0a 00 00 00 02
    00 00 01 8b cf e5 68 00 00 00 01 8b cf e5 69 f4
    0f 00 05 04 00 00 00 02 40 29 00 00 00 00 00 00
    40 34 00 00 00 00 00 00 0f 00 06 02 00 00 00 02
    00 01 0f 00 07 0b 00 00 00 04 00 00 00 10 70 69
    7a 7a 61 4f 72 64 65 72 3a 31 2e 30 2e 30 00 00
    00 05 41 6c 69 63 65 00 00 00 10 70 69 7a 7a 61
    4f 72 64 65 72 3a 31 2e 30 2e 30 00 00 00 03 42
    6f 62 0d 00 08 08 0d 00 00 00 01 00 00 00 01 0b
    0b 00 00 00 01 00 00 00 07 63 68 61 6e 6e 65 6c
    00 00 00 03 77 65 62 00 00
    """
)
BUNDLE_STRUCT = PUBLISH_CALL[0x16:0xF8]

PUBLISH_OK = b"\x80\x01\x00\x02" + b"\x00\x00\x00\x07publish" + b"\x00\x00\x00\x01" + b"\x00"

PUBLISH_SESSION_EXPIRED = (
    b"\x80\x01\x00\x02\x00\x00\x00\x07publish\x00\x00\x00\x01"
    + b"\x0c\x00\x02"
    + b"\x0b\x00\x01\x00\x00\x00\x2c"
    + (SESSION + " expired").encode()
    + b"\x00"
    + b"\x00"
)

CONNECT_CALL = (
    b"\x80\x01\x00\x01\x00\x00\x00\x07connect\x00\x00\x00\x01"
    + b"\x0b\x00\x01\x00\x00\x00\x05admin"
    + b"\x0b\x00\x02\x00\x00\x00\x05admin"
    + b"\x00"
)

CONNECT_REPLY = (
    b"\x80\x01\x00\x02\x00\x00\x00\x07connect\x00\x00\x00\x01"
    + b"\x0b\x00\x00\x00\x00\x00\x24"
    + SESSION.encode()
    + b"\x00"
)


def find_stream_id_call(seqid: int, session: str = SESSION) -> bytes:
    def string(fid: int, text: str) -> bytes:
        data = text.encode()
        return b"\x0b" + fid.to_bytes(2, "big") + len(data).to_bytes(4, "big") + data

    header = b"\x80\x01\x00\x01\x00\x00\x00\x0cfindStreamId" + seqid.to_bytes(4, "big")
    return header + string(1, session) + string(2, "pizzaOrder") + string(3, "1.0.0") + b"\x00"


def find_stream_id_not_found(seqid: int) -> bytes:
    return (
        b"\x80\x01\x00\x02\x00\x00\x00\x0cfindStreamId"
        + seqid.to_bytes(4, "big")
        + b"\x0c\x00\x01"
        + b"\x0b\x00\x01\x00\x00\x00\x30"
        + b"Stream definition not exist for pizzaOrder 1.0.0"
        + b"\x00"
        + b"\x00"
    )


PIZZA_ORDER = (
    '{"name":"pizzaOrder","version":"1.0.0",'
    ' "payloadData":[{"name":"orderNo","type":"INT"},'
    '                {"name":"customerName","type":"STRING"},'
    '                {"name":"price","type":"DOUBLE"},'
    '                {"name":"delivered","type":"BOOL"}]}'
)

DELIVERY_STREAM = (
    "{'name':'deliveryStream','version':'1.0.0','nickName':'Analytics Statistics Information',"
    "'description':'Details of Analytics Statistics','metaData':[{'name':'deliveryNo','type':'STRING'}],"
    "'payloadData':[{'name':'orderNo','type':'STRING'},{'name':'areaName','type':'STRING'},"
    "{'name':'time','type':'LONG'},{'name':'totalBill','type':'DOUBLE'},{'name':'deliveredBy','type':'STRING'}]}"
)

ORDER_STREAM = (
    "{'name':'orderStream','version':'1.0.0','nickName':'Analytics Statistics Information',"
    "'description':'Details of Analytics Statistics','payloadData':[{'name':'orderNo','type':'STRING'},"
    "{'name':'customerName','type':'STRING'},{'name':'telephoneNo','type':'STRING'},"
    "{'name':'orderInfo','type':'STRING'},{'name':'orderedTime','type':'STRING'}]}"
)
