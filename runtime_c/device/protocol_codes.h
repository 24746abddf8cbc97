/* Message types, refusal codes and the version of the device protocol (docs/device_protocol.md).
 * iree_py/runtime/protocol.py mirrors these numbers; tests/device checks both sides agree. */
#ifndef IRP_DEVICE_PROTOCOL_CODES_H_
#define IRP_DEVICE_PROTOCOL_CODES_H_

#define IRP_PROTOCOL_VERSION 1u

enum irp_message_type_e {
  IRP_MSG_HELLO = 0x01,
  IRP_MSG_STATUS = 0x02,
  IRP_MSG_UPLOAD_BEGIN = 0x03,
  IRP_MSG_UPLOAD_DATA = 0x04,
  IRP_MSG_UPLOAD_END = 0x05,
  IRP_MSG_RUN_BEGIN = 0x06,
  IRP_MSG_INPUT_DATA = 0x07,
  IRP_MSG_RUN = 0x08,
  IRP_MSG_READ_OUTPUT = 0x09,
  IRP_MSG_BENCHMARK = 0x0A,
  IRP_MSG_PROFILE = 0x0B,
  IRP_MSG_TRACE = 0x0C,
  IRP_MSG_RESPONSE = 0x80, /* response type = request type | IRP_MSG_RESPONSE */
  IRP_MSG_BUSY = 0xFF,     /* a long request was received and is being worked on */
};

enum irp_refusal_e {
  IRP_REPLY_OK = 0,
  IRP_REFUSE_BAD_REQUEST = 1,
  IRP_REFUSE_WRONG_ARCH = 2,
  IRP_REFUSE_TOO_BIG = 3,
  IRP_REFUSE_NO_UPLOAD = 4,
  IRP_REFUSE_BAD_OFFSET = 5,
  IRP_REFUSE_INCOMPLETE = 6,
  IRP_REFUSE_BAD_CRC = 7,
  IRP_REFUSE_LOAD_FAILED = 8,
  IRP_REFUSE_STORAGE = 9,
  IRP_REFUSE_NO_MODULE = 10,
  IRP_REFUSE_NO_FUNCTION = 11,
  IRP_REFUSE_OUT_OF_RAM = 12,
  IRP_REFUSE_BAD_INPUT = 13,
  IRP_REFUSE_RUN_FAILED = 14,
  IRP_REFUSE_NO_RUN = 15,
};

enum irp_module_state_e {
  IRP_MODULE_EMPTY = 0,
  IRP_MODULE_UPLOADING = 1,
  IRP_MODULE_ACCEPTED = 2,
};

#endif /* IRP_DEVICE_PROTOCOL_CODES_H_ */
