/* See vulkan_device.h. Every Vulkan function is looked up through vkGetInstanceProcAddr /
 * vkGetDeviceProcAddr from the library opened at run time; vulkan.h gives only the types. */
#define _POSIX_C_SOURCE 200809L
#include "vulkan_device.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#define IRP_VK_MAX_RANGES 64
#define IRP_VK_MAX_TIMED 1024 /* timed dispatches per submission; later ones in it go untimed */
#define IRP_SPIRV_MAGIC 0x07230203u
#define IRP_SPIRV_OP_ENTRY_POINT 15u
#define IRP_SPIRV_EXECUTION_MODEL_GLCOMPUTE 5u
#define IRP_SPIRV_OP_CAPABILITY 17u
#define IRP_SPIRV_CAPABILITY_SHADER 1u

/* Optional device features shaders may need, each with the SPIR-V capability that asks for it
 * (targets/vulkan.toml's flags; the compiler declares a capability only where a shader uses it). */
typedef enum irp_vk_feature_e {
  IRP_VK_FEATURE_INT64 = 1u << 0,
  IRP_VK_FEATURE_STORAGE_8BIT = 1u << 1,
  IRP_VK_FEATURE_STORAGE_16BIT = 1u << 2,
  IRP_VK_FEATURE_FLOAT64 = 1u << 3,
} irp_vk_feature_t;

typedef struct irp_vk_feature_info_t {
  uint32_t feature;
  uint32_t capability; /* the SPIR-V enumerant */
  const char* feature_name;
  const char* capability_name;
  const char* target_flag; /* the target flag (targets/vulkan.toml) that lets the compiler use it */
} irp_vk_feature_info_t;

static const irp_vk_feature_info_t irp_vk_features[] = {
    {IRP_VK_FEATURE_INT64, 11u, "shaderInt64", "Int64", "shader_int64"},
    {IRP_VK_FEATURE_STORAGE_8BIT, 4448u, "storageBuffer8BitAccess", "StorageBuffer8BitAccess", "storage_buffer_8bit"},
    {IRP_VK_FEATURE_STORAGE_16BIT, 4433u, "storageBuffer16BitAccess", "StorageBuffer16BitAccess",
     "storage_buffer_16bit"},
    {IRP_VK_FEATURE_FLOAT64, 10u, "shaderFloat64", "Float64", "shader_float64"},
};
#define IRP_VK_FEATURE_COUNT (sizeof(irp_vk_features) / sizeof(irp_vk_features[0]))

/* X(name): instance-level functions, then device-level ones. */
#define IRP_VK_INSTANCE_FUNCTIONS(X)                                                                        \
  X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)                       \
  X(vkGetPhysicalDeviceQueueFamilyProperties) X(vkGetPhysicalDeviceMemoryProperties)                        \
  X(vkEnumerateDeviceExtensionProperties) X(vkCreateDevice) X(vkGetDeviceProcAddr)                         \
  X(vkGetPhysicalDeviceFeatures2)
#define IRP_VK_DEVICE_FUNCTIONS(X)                                                                          \
  X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer)                               \
  X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory) X(vkMapMemory) \
  X(vkCreateShaderModule) X(vkDestroyShaderModule) X(vkCreateDescriptorSetLayout)                          \
  X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout)                      \
  X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkCreateCommandPool) X(vkDestroyCommandPool)           \
  X(vkAllocateCommandBuffers) X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkResetCommandBuffer)         \
  X(vkCmdBindPipeline) X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdPipelineBarrier)                       \
  X(vkCmdPushDescriptorSetKHR) X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences) X(vkResetFences)       \
  X(vkQueueSubmit) X(vkDeviceWaitIdle) X(vkCreateQueryPool) X(vkDestroyQueryPool) X(vkCmdResetQueryPool)       \
  X(vkCmdWriteTimestamp) X(vkGetQueryPoolResults)

/* Device memory the host sees at `host` (mapped, or for constants the caller's bytes it copies). */
typedef struct irp_vk_range_t {
  const uint8_t* host;
  size_t size;
  VkBuffer buffer;
  VkDeviceMemory memory;
  uint8_t* mapped;
} irp_vk_range_t;

/* A caller's buffer copied into the staging range for the submission being recorded. */
typedef struct irp_vk_staged_t {
  uint8_t* host;
  size_t length;
  size_t offset; /* in the staging range */
} irp_vk_staged_t;

typedef struct irp_vk_pipeline_t {
  VkShaderModule shader;
  VkDescriptorSetLayout set_layout;
  VkPipelineLayout layout;
  VkPipeline pipeline;
  uint32_t push_words; /* binding offsets, then the module's push constants */
} irp_vk_pipeline_t;

typedef struct irp_vk_device_t {
  irp_hal_device_t base;
  irp_allocator_t allocator;
  void* library;
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
#define IRP_VK_DECLARE_(name) PFN_##name name;
  IRP_VK_INSTANCE_FUNCTIONS(IRP_VK_DECLARE_)
  IRP_VK_DEVICE_FUNCTIONS(IRP_VK_DECLARE_)
#undef IRP_VK_DECLARE_
  VkInstance instance;
  VkPhysicalDevice physical;
  VkPhysicalDeviceLimits limits;
  uint32_t api_version;
  uint32_t features; /* irp_vk_feature_t bits: present on the device and enabled at creation */
  VkPhysicalDeviceMemoryProperties memory_properties;
  VkDevice device;
  VkQueue queue;
  uint32_t queue_family;
  VkCommandPool command_pool;
  VkCommandBuffer commands;
  VkFence fence;
  uint32_t recorded; /* dispatches in `commands` since the last submission */
  irp_vk_range_t ranges[IRP_VK_MAX_RANGES];
  irp_vk_range_t staging;
  size_t staging_used;
  irp_vk_staged_t staged[IRP_VULKAN_MAX_STAGED];
  uint32_t staged_count;
  /* Timestamps (when the queue has them): queries 2i and 2i + 1 bracket the submission's i-th
   * timed dispatch, whose device time goes to *timed[i] once the submission has run. */
  VkQueryPool timestamps;
  uint64_t timestamp_mask; /* the queue's timestampValidBits */
  uint64_t* timed[IRP_VK_MAX_TIMED];
  uint32_t timed_count;
} irp_vk_device_t;

static const char* irp_vk_result_name(VkResult result) {
  switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_INVALID_SHADER_NV: return "VK_ERROR_INVALID_SHADER_NV";
    default: return "a VkResult error";
  }
}

#define IRP_VK_CHECK(diag, call, what)                                                                   \
  do {                                                                                                  \
    VkResult irp_vk_result_ = (call);                                                                   \
    if (irp_vk_result_ != VK_SUCCESS) {                                                                 \
      return IRP_FAIL((diag), IRP_RUNTIME_FAILURE, "vulkan: %s failed: %s (%d)", (what),                \
                      irp_vk_result_name(irp_vk_result_), (int)irp_vk_result_);                          \
    }                                                                                                   \
  } while (0)

/* --- device memory ------------------------------------------------------------------------------ */

static irp_status_t irp_vk_memory_type(const irp_vk_device_t* vk, uint32_t type_bits, uint32_t* out_index,
                                       irp_diag_t* diag) {
  const VkMemoryPropertyFlags needed = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int found = -1;
  for (uint32_t i = 0; i < vk->memory_properties.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags flags = vk->memory_properties.memoryTypes[i].propertyFlags;
    if (!(type_bits & (1u << i)) || (flags & needed) != needed) continue;
    if (found < 0 || (flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) found = (int)i;
    if (flags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) break;
  }
  if (found < 0) return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: the device has no host-visible coherent memory");
  *out_index = (uint32_t)found;
  return IRP_OK;
}

static void irp_vk_range_release(irp_vk_device_t* vk, irp_vk_range_t* range) {
  if (range->buffer != VK_NULL_HANDLE) vk->vkDestroyBuffer(vk->device, range->buffer, NULL);
  if (range->memory != VK_NULL_HANDLE) vk->vkFreeMemory(vk->device, range->memory, NULL); /* unmaps */
  memset(range, 0, sizeof(*range));
}

/* A storage buffer of `size` bytes in mapped host-visible memory; on failure *range is released. */
static irp_status_t irp_vk_range_create(irp_vk_device_t* vk, size_t size, irp_vk_range_t* range, irp_diag_t* diag) {
  memset(range, 0, sizeof(*range));
  VkBufferCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = size,
      .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
               VK_BUFFER_USAGE_TRANSFER_DST_BIT,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
  };
  VkResult result = vk->vkCreateBuffer(vk->device, &info, NULL, &range->buffer);
  VkMemoryRequirements requirements;
  uint32_t type = 0;
  irp_status_t status = IRP_OK;
  if (result == VK_SUCCESS) {
    vk->vkGetBufferMemoryRequirements(vk->device, range->buffer, &requirements);
    status = irp_vk_memory_type(vk, requirements.memoryTypeBits, &type, diag);
  }
  if (result == VK_SUCCESS && status == IRP_OK) {
    VkMemoryAllocateInfo allocate = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = requirements.size, .memoryTypeIndex = type};
    result = vk->vkAllocateMemory(vk->device, &allocate, NULL, &range->memory);
  }
  if (result == VK_SUCCESS && status == IRP_OK) result = vk->vkBindBufferMemory(vk->device, range->buffer, range->memory, 0);
  void* mapped = NULL;
  if (result == VK_SUCCESS && status == IRP_OK) result = vk->vkMapMemory(vk->device, range->memory, 0, VK_WHOLE_SIZE, 0, &mapped);
  if (result != VK_SUCCESS || status != IRP_OK) {
    irp_vk_range_release(vk, range);
    if (status != IRP_OK) return status;
    return IRP_FAIL(diag, result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY
                              ? IRP_OUT_OF_MEMORY : IRP_RUNTIME_FAILURE,
                    "vulkan: a %zu-byte device buffer could not be made: %s", size, irp_vk_result_name(result));
  }
  range->mapped = (uint8_t*)mapped;
  range->host = range->mapped;
  range->size = size;
  return IRP_OK;
}

static irp_vk_range_t* irp_vk_free_slot(irp_vk_device_t* vk) {
  for (int i = 0; i < IRP_VK_MAX_RANGES; ++i) {
    if (vk->ranges[i].buffer == VK_NULL_HANDLE) return &vk->ranges[i];
  }
  return NULL;
}

static irp_status_t irp_vk_allocate_buffer(irp_hal_device_t* device, size_t size, void** out_data, irp_diag_t* diag) {
  irp_vk_device_t* vk = (irp_vk_device_t*)device;
  *out_data = NULL;
  irp_vk_range_t* slot = irp_vk_free_slot(vk);
  if (slot == NULL) return IRP_FAIL(diag, IRP_OUT_OF_MEMORY, "vulkan: more than %d device buffers", IRP_VK_MAX_RANGES);
  IRP_RETURN_IF_ERROR(irp_vk_range_create(vk, size > 0 ? size : 16, slot, diag));
  *out_data = slot->mapped;
  return IRP_OK;
}

static void irp_vk_release_range_at(irp_vk_device_t* vk, const void* host) {
  for (int i = 0; i < IRP_VK_MAX_RANGES; ++i) {
    if (vk->ranges[i].buffer != VK_NULL_HANDLE && vk->ranges[i].host == host) {
      irp_vk_range_release(vk, &vk->ranges[i]);
      return;
    }
  }
}

static void irp_vk_free_buffer(irp_hal_device_t* device, void* data) {
  if (data != NULL) irp_vk_release_range_at((irp_vk_device_t*)device, data);
}

static irp_status_t irp_vk_register_constants(irp_hal_device_t* device, const void* data, size_t length,
                                              irp_diag_t* diag) {
  irp_vk_device_t* vk = (irp_vk_device_t*)device;
  irp_vk_range_t* slot = irp_vk_free_slot(vk);
  if (slot == NULL) return IRP_FAIL(diag, IRP_OUT_OF_MEMORY, "vulkan: more than %d device buffers", IRP_VK_MAX_RANGES);
  IRP_RETURN_IF_ERROR(irp_vk_range_create(vk, length, slot, diag));
  memcpy(slot->mapped, data, length);
  slot->host = (const uint8_t*)data; /* dispatches bind the caller's pointers: they map to the copy */
  return IRP_OK;
}

static void irp_vk_unregister_constants(irp_hal_device_t* device, const void* data) {
  irp_vk_release_range_at((irp_vk_device_t*)device, data);
}

/* --- executables ------------------------------------------------------------------------------ */

/* The SPIR-V version this device's Vulkan version consumes, as the header word encodes it. */
static uint32_t irp_vk_max_spirv_version(uint32_t api_version) {
  uint32_t minor = VK_API_VERSION_MINOR(api_version);
  uint32_t spirv_minor = minor >= 3 ? 6 : minor == 2 ? 5 : minor == 1 ? 3 : 0;
  return (1u << 16) | (spirv_minor << 8);
}

/* A shader's OpCapability: Shader, or one whose device feature this device has (and enabled). */
static irp_status_t irp_vk_check_capability(const irp_vk_device_t* vk, const char* name, uint32_t capability,
                                            irp_diag_t* diag) {
  if (capability == IRP_SPIRV_CAPABILITY_SHADER) return IRP_OK;
  for (size_t i = 0; i < IRP_VK_FEATURE_COUNT; ++i) {
    const irp_vk_feature_info_t* f = &irp_vk_features[i];
    if (f->capability != capability) continue;
    if (vk->features & f->feature) return IRP_OK;
    return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: entry point '%s' needs the device feature %s (SPIR-V "
                    "capability %s), which this device lacks (compile for a target with %s = false)", name,
                    f->feature_name, f->capability_name, f->target_flag);
  }
  return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: entry point '%s' declares SPIR-V capability %u, which this "
                  "driver does not enable", name, capability);
}

/* Checks the shader of entry point `index` at words [begin, end) of the code. */
static irp_status_t irp_vk_check_shader(const irp_vk_device_t* vk, const irp_hal_executable_t* executable,
                                        uint32_t index, const uint32_t* words, size_t count, irp_diag_t* diag) {
  const char* name = executable->entry_points[index].name;
  if (count < 5 || words[0] != IRP_SPIRV_MAGIC) {
    return IRP_FAIL(diag, IRP_INVALID_MODULE, "spirv executable: entry point '%s' is no SPIR-V module (bad magic)", name);
  }
  uint32_t version = words[1];
  if ((version >> 16) != 1 || version > irp_vk_max_spirv_version(vk->api_version) || (version & 0xFF0000FFu) != 0) {
    return IRP_FAIL(diag, IRP_UNSUPPORTED, "spirv executable: entry point '%s' is SPIR-V %u.%u, which this Vulkan %u.%u "
                    "device does not take", name, version >> 16, (version >> 8) & 0xFF,
                    VK_API_VERSION_MAJOR(vk->api_version), VK_API_VERSION_MINOR(vk->api_version));
  }
  size_t name_length = strlen(name);
  for (size_t at = 5; at < count;) {
    uint32_t word_count = words[at] >> 16, opcode = words[at] & 0xFFFFu;
    if (word_count == 0 || word_count > count - at) {
      return IRP_FAIL(diag, IRP_INVALID_MODULE, "spirv executable: entry point '%s': instruction at word %zu runs "
                      "past its shader", name, at);
    }
    if (opcode == IRP_SPIRV_OP_CAPABILITY && word_count == 2) {
      IRP_RETURN_IF_ERROR(irp_vk_check_capability(vk, name, words[at + 1], diag));
    }
    if (opcode == IRP_SPIRV_OP_ENTRY_POINT && word_count >= 4 && words[at + 1] == IRP_SPIRV_EXECUTION_MODEL_GLCOMPUTE) {
      const char* literal = (const char*)&words[at + 3];
      size_t room = (size_t)(word_count - 3) * 4;
      if (name_length < room && memcmp(literal, name, name_length + 1) == 0) return IRP_OK;
    }
    at += word_count;
  }
  return IRP_FAIL(diag, IRP_INVALID_MODULE, "spirv executable: its shader for '%s' has no GLCompute entry point of "
                  "that name", name);
}

static irp_status_t irp_vk_make_pipeline(irp_vk_device_t* vk, const irp_hal_entry_point_t* entry,
                                         const uint32_t* words, size_t count, irp_vk_pipeline_t* out, irp_diag_t* diag) {
  out->push_words = (uint32_t)entry->binding_count + entry->push_constant_count;
  if (out->push_words * 4u > vk->limits.maxPushConstantsSize) {
    return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: entry point '%s' needs %u push constant bytes; the device has %u",
                    entry->name, out->push_words * 4u, vk->limits.maxPushConstantsSize);
  }
  if (entry->binding_count > 32) {
    return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: entry point '%s' has %u bindings; push descriptors take 32",
                    entry->name, entry->binding_count);
  }
  VkShaderModuleCreateInfo shader = {
      .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = count * 4, .pCode = words};
  IRP_VK_CHECK(diag, vk->vkCreateShaderModule(vk->device, &shader, NULL, &out->shader), "vkCreateShaderModule");
  VkDescriptorSetLayoutBinding bindings[32];
  for (uint32_t i = 0; i < entry->binding_count; ++i) {
    VkDescriptorSetLayoutBinding binding = {
        .binding = i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 1,
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    bindings[i] = binding;
  }
  VkDescriptorSetLayoutCreateInfo set = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
      .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
      .bindingCount = entry->binding_count,
      .pBindings = bindings};
  IRP_VK_CHECK(diag, vk->vkCreateDescriptorSetLayout(vk->device, &set, NULL, &out->set_layout),
               "vkCreateDescriptorSetLayout");
  VkPushConstantRange push = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = out->push_words * 4u};
  VkPipelineLayoutCreateInfo layout = {
      .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1, .pSetLayouts = &out->set_layout,
      .pushConstantRangeCount = out->push_words > 0 ? 1u : 0u, .pPushConstantRanges = &push};
  IRP_VK_CHECK(diag, vk->vkCreatePipelineLayout(vk->device, &layout, NULL, &out->layout), "vkCreatePipelineLayout");
  VkComputePipelineCreateInfo pipeline = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = out->shader, .pName = entry->name},
      .layout = out->layout};
  IRP_VK_CHECK(diag, vk->vkCreateComputePipelines(vk->device, VK_NULL_HANDLE, 1, &pipeline, NULL, &out->pipeline),
               "vkCreateComputePipelines");
  return IRP_OK;
}

static void irp_vk_release_executable(irp_hal_device_t* device, const irp_allocator_t* allocator,
                                      irp_hal_executable_t* executable) {
  irp_vk_device_t* vk = (irp_vk_device_t*)device;
  irp_vk_pipeline_t* pipelines = (irp_vk_pipeline_t*)executable->image;
  if (pipelines == NULL) return;
  if (vk->recorded > 0) vk->vkDeviceWaitIdle(vk->device);
  for (uint32_t i = 0; i < executable->entry_point_count; ++i) {
    if (pipelines[i].pipeline != VK_NULL_HANDLE) vk->vkDestroyPipeline(vk->device, pipelines[i].pipeline, NULL);
    if (pipelines[i].layout != VK_NULL_HANDLE) vk->vkDestroyPipelineLayout(vk->device, pipelines[i].layout, NULL);
    if (pipelines[i].set_layout != VK_NULL_HANDLE) {
      vk->vkDestroyDescriptorSetLayout(vk->device, pipelines[i].set_layout, NULL);
    }
    if (pipelines[i].shader != VK_NULL_HANDLE) vk->vkDestroyShaderModule(vk->device, pipelines[i].shader, NULL);
  }
  irp_free(allocator, pipelines);
  executable->image = NULL;
}

static irp_status_t irp_vk_prepare_executable(irp_hal_device_t* device, const irp_allocator_t* allocator,
                                              irp_hal_executable_t* executable, irp_diag_t* diag) {
  irp_vk_device_t* vk = (irp_vk_device_t*)device;
  if (executable->format != IRP_EXECUTABLE_FORMAT_SPIRV) {
    return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: executable for %s is not SPIR-V (format %d)", executable->arch,
                    (int)executable->format);
  }
  if (((uintptr_t)executable->code & 3u) != 0) {
    return IRP_FAIL(diag, IRP_INVALID_MODULE, "spirv executable: its code is not 4-byte aligned");
  }
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, executable->entry_point_count, sizeof(irp_vk_pipeline_t), 8,
                                          diag, &executable->image));
  irp_vk_pipeline_t* pipelines = (irp_vk_pipeline_t*)executable->image;
  const uint32_t* words = (const uint32_t*)(const void*)executable->code;
  for (uint32_t i = 0; i < executable->entry_point_count; ++i) {
    const irp_hal_entry_point_t* entry = &executable->entry_points[i];
    size_t begin = entry->code_offset;
    size_t end = i + 1 < executable->entry_point_count ? executable->entry_points[i + 1].code_offset
                                                       : executable->code_length;
    if (begin % 4 != 0 || end % 4 != 0 || begin >= end || end > executable->code_length) {
      return IRP_FAIL(diag, IRP_INVALID_MODULE, "spirv executable: entry point '%s' spans bytes [%zu, %zu) of its "
                      "%zu bytes of code, not a run of whole words", entry->name, begin, end, executable->code_length);
    }
    IRP_RETURN_IF_ERROR(irp_vk_check_shader(vk, executable, i, words + begin / 4, (end - begin) / 4, diag));
    IRP_RETURN_IF_ERROR(irp_vk_make_pipeline(vk, entry, words + begin / 4, (end - begin) / 4, &pipelines[i], diag));
  }
  return IRP_OK;
}

/* --- dispatch --------------------------------------------------------------------------------- */

/* Adds each timed dispatch's device time of the submission that has just run to its counter. */
static irp_status_t irp_vk_read_timestamps(irp_vk_device_t* vk, irp_diag_t* diag) {
  uint32_t count = vk->timed_count;
  vk->timed_count = 0;
  for (uint32_t first = 0; first < count;) {
    uint64_t ticks[2 * 64];
    uint32_t batch = count - first < 64 ? count - first : 64;
    IRP_VK_CHECK(diag, vk->vkGetQueryPoolResults(vk->device, vk->timestamps, 2 * first, 2 * batch, sizeof(ticks), ticks,
                                                 sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                 "vkGetQueryPoolResults");
    for (uint32_t i = 0; i < batch; ++i) {
      uint64_t elapsed = (ticks[2 * i + 1] - ticks[2 * i]) & vk->timestamp_mask;
      *vk->timed[first + i] += (uint64_t)((double)elapsed * (double)vk->limits.timestampPeriod + 0.5);
    }
    first += batch;
  }
  return IRP_OK;
}

/* Runs what is recorded and waits for it; the staged copies go back to their callers' buffers and the staging range
   is free again (also when nothing was recorded: copies staged for a dispatch that failed before recording). */
static irp_status_t irp_vk_submit(irp_vk_device_t* vk, irp_diag_t* diag) {
  if (vk->recorded > 0) {
    vk->recorded = 0;
    IRP_VK_CHECK(diag, vk->vkEndCommandBuffer(vk->commands), "vkEndCommandBuffer");
    VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                           .pCommandBuffers = &vk->commands};
    IRP_VK_CHECK(diag, vk->vkQueueSubmit(vk->queue, 1, &submit, vk->fence), "vkQueueSubmit");
    IRP_VK_CHECK(diag, vk->vkWaitForFences(vk->device, 1, &vk->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    IRP_VK_CHECK(diag, vk->vkResetFences(vk->device, 1, &vk->fence), "vkResetFences");
    IRP_VK_CHECK(diag, vk->vkResetCommandBuffer(vk->commands, 0), "vkResetCommandBuffer");
    IRP_RETURN_IF_ERROR(irp_vk_read_timestamps(vk, diag));
  }
  for (uint32_t i = 0; i < vk->staged_count; ++i) {
    const irp_vk_staged_t* s = &vk->staged[i];
    const uint8_t* copy = vk->staging.mapped + s->offset;
    if (memcmp(s->host, copy, s->length) != 0) memcpy(s->host, copy, s->length);
  }
  vk->staged_count = 0;
  vk->staging_used = 0;
  return IRP_OK;
}

static irp_status_t irp_vk_synchronize(irp_hal_device_t* device, irp_diag_t* diag) {
  return irp_vk_submit((irp_vk_device_t*)device, diag);
}

#define IRP_VK_STAGING_ALIGNMENT 64

/* Where the host bytes [data, data + length) already are on the device: a range, or a copy staged for the
   submission being recorded. False when neither holds them. */
static bool irp_vk_find(const irp_vk_device_t* vk, const uint8_t* data, size_t length, VkBuffer* out_buffer,
                        size_t* out_offset, size_t* out_size) {
  for (int i = 0; i < IRP_VK_MAX_RANGES; ++i) {
    const irp_vk_range_t* r = &vk->ranges[i];
    if (r->buffer != VK_NULL_HANDLE && data >= r->host && length <= r->size && (size_t)(data - r->host) <= r->size - length) {
      *out_buffer = r->buffer, *out_offset = (size_t)(data - r->host), *out_size = r->size;
      return true;
    }
  }
  for (uint32_t i = 0; i < vk->staged_count; ++i) {
    const irp_vk_staged_t* s = &vk->staged[i];
    if (data >= s->host && length <= s->length && (size_t)(data - s->host) <= s->length - length) {
      *out_buffer = vk->staging.buffer, *out_offset = s->offset + (size_t)(data - s->host), *out_size = vk->staging.size;
      return true;
    }
  }
  return false;
}

/* The staging bytes (a bound: each copy's aligned start, then its bytes) and copies the dispatch's bindings that are
   not on the device yet need. */
static size_t irp_vk_staging_need(const irp_vk_device_t* vk, const irp_dispatch_state_t* state, uint32_t* out_copies) {
  size_t need = 0;
  *out_copies = 0;
  for (uint32_t i = 0; i < state->binding_count; ++i) {
    VkBuffer buffer;
    size_t offset, size, length = state->binding_lengths[i];
    if (irp_vk_find(vk, (const uint8_t*)state->bindings[i], length, &buffer, &offset, &size)) continue;
    need += IRP_VK_STAGING_ALIGNMENT + (length > 0 ? length : 4);
    *out_copies += 1;
  }
  return need;
}

/* Room in the staging range for every binding of the dispatch that must be staged, made before any binding is
   located: making room submits what is recorded (its staged copies go back and the range is reused from byte 0)
   and may replace the range by a larger one, which would leave a binding already located pointing at a copy
   overwritten or freed. */
static irp_status_t irp_vk_reserve_staging(irp_vk_device_t* vk, const irp_dispatch_state_t* state,
                                           irp_diag_t* diag) {
  uint32_t copies;
  size_t need = irp_vk_staging_need(vk, state, &copies);
  if (vk->staged_count + copies <= IRP_VULKAN_MAX_STAGED && vk->staging_used + need <= vk->staging.size) return IRP_OK;
  IRP_RETURN_IF_ERROR(irp_vk_submit(vk, diag));
  need = irp_vk_staging_need(vk, state, &copies); /* nothing is staged now: copies made for earlier dispatches too */
  if (need > vk->staging.size) {
    size_t size = vk->staging.size * 2 > need ? vk->staging.size * 2 : need;
    irp_vk_range_release(vk, &vk->staging);
    IRP_RETURN_IF_ERROR(irp_vk_range_create(vk, size, &vk->staging, diag));
  }
  return IRP_OK;
}

/* Where the dispatch finds the host bytes [data, data + length): a range, or a staged copy, made now in the room
   irp_vk_reserve_staging left. */
static irp_status_t irp_vk_locate(irp_vk_device_t* vk, uint8_t* data, size_t length, VkBuffer* out_buffer,
                                  size_t* out_offset, size_t* out_size, irp_diag_t* diag) {
  if (irp_vk_find(vk, data, length, out_buffer, out_offset, out_size)) return IRP_OK;
  size_t offset = (vk->staging_used + IRP_VK_STAGING_ALIGNMENT - 1) & ~(size_t)(IRP_VK_STAGING_ALIGNMENT - 1);
  if (vk->staged_count == IRP_VULKAN_MAX_STAGED || offset + (length > 0 ? length : 4) > vk->staging.size) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "vulkan: a staged copy of %zu bytes does not fit the room reserved "
                    "for its dispatch", length);
  }
  memcpy(vk->staging.mapped + offset, data, length);
  irp_vk_staged_t staged = {data, length, offset};
  vk->staged[vk->staged_count++] = staged;
  vk->staging_used = offset + length;
  *out_buffer = vk->staging.buffer, *out_offset = offset, *out_size = vk->staging.size;
  return IRP_OK;
}

static irp_status_t irp_vk_dispatch(irp_hal_device_t* device, const irp_hal_dispatch_t* dispatch,
                                    irp_hal_kernel_failure_t* out_failure, irp_diag_t* diag) {
  (void)out_failure; /* shaders report no status */
  irp_vk_device_t* vk = (irp_vk_device_t*)device;
  const irp_vk_pipeline_t* pipeline = &((const irp_vk_pipeline_t*)dispatch->executable->image)[dispatch->entry_point];
  const irp_dispatch_state_t* state = &dispatch->state;
  const char* name = dispatch->executable->entry_points[dispatch->entry_point].name;
  for (int axis = 0; axis < 3; ++axis) {
    if (state->workgroup_count[axis] > vk->limits.maxComputeWorkGroupCount[axis]) {
      return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "vulkan: dispatch of '%s': %u workgroups on axis %d, the device "
                      "takes %u", name, state->workgroup_count[axis], axis, vk->limits.maxComputeWorkGroupCount[axis]);
    }
  }
  if (state->binding_count + state->push_constant_count != pipeline->push_words) {
    return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "vulkan: dispatch of '%s' with %u bindings and %u push constants; its "
                    "pipeline takes %u words", name, state->binding_count, state->push_constant_count,
                    pipeline->push_words);
  }
  VkDescriptorBufferInfo buffers[32];
  VkWriteDescriptorSet writes[32];
  uint32_t words[IRP_MAX_BINDINGS + IRP_MAX_PUSH_CONSTANTS];
  size_t alignment = vk->limits.minStorageBufferOffsetAlignment > 0 ? vk->limits.minStorageBufferOffsetAlignment : 1;
  IRP_RETURN_IF_ERROR(irp_vk_reserve_staging(vk, state, diag));
  for (uint32_t i = 0; i < state->binding_count; ++i) {
    VkBuffer buffer;
    size_t offset, size;
    IRP_RETURN_IF_ERROR(irp_vk_locate(vk, (uint8_t*)state->bindings[i], state->binding_lengths[i], &buffer, &offset,
                                      &size, diag));
    size_t bound = offset / alignment * alignment;
    if ((offset - bound) % 4 != 0) {
      return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "vulkan: dispatch of '%s': binding %u starts at byte %zu of its "
                      "buffer, not on a 4-byte element", name, i, offset);
    }
    size_t range = size - bound;
    if (range > vk->limits.maxStorageBufferRange) range = vk->limits.maxStorageBufferRange;
    if (offset - bound + state->binding_lengths[i] > range) {
      return IRP_FAIL(diag, IRP_RUNTIME_FAILURE, "vulkan: dispatch of '%s': binding %u spans %zu bytes, more than the "
                      "device's maxStorageBufferRange %u", name, i, state->binding_lengths[i],
                      vk->limits.maxStorageBufferRange);
    }
    VkDescriptorBufferInfo info = {.buffer = buffer, .offset = bound, .range = range};
    buffers[i] = info;
    VkWriteDescriptorSet write = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstBinding = i,
                                  .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                  .pBufferInfo = &buffers[i]};
    writes[i] = write;
    words[i] = (uint32_t)((offset - bound) / 4);
  }
  for (uint32_t i = 0; i < state->push_constant_count; ++i) words[state->binding_count + i] = state->push_constants[i];
  if (vk->recorded == 0) {
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    IRP_VK_CHECK(diag, vk->vkBeginCommandBuffer(vk->commands, &begin), "vkBeginCommandBuffer");
    vk->timed_count = 0; /* a submission that failed left its timed dispatches unread */
  }
  vk->recorded += 1;
  bool timed = dispatch->device_ns != NULL && vk->timestamps != VK_NULL_HANDLE && vk->timed_count < IRP_VK_MAX_TIMED;
  uint32_t query = 2 * vk->timed_count;
  if (timed) {
    vk->timed[vk->timed_count++] = dispatch->device_ns;
    vk->vkCmdResetQueryPool(vk->commands, vk->timestamps, query, 2);
    vk->vkCmdWriteTimestamp(vk->commands, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, vk->timestamps, query);
  }
  vk->vkCmdBindPipeline(vk->commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline->pipeline);
  vk->vkCmdPushDescriptorSetKHR(vk->commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline->layout, 0,
                                state->binding_count, writes);
  if (pipeline->push_words > 0) {
    vk->vkCmdPushConstants(vk->commands, pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, pipeline->push_words * 4u,
                           words);
  }
  vk->vkCmdDispatch(vk->commands, state->workgroup_count[0], state->workgroup_count[1], state->workgroup_count[2]);
  if (timed) vk->vkCmdWriteTimestamp(vk->commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, vk->timestamps, query + 1);
  /* The next dispatch (and the host, after the fence) sees what this one wrote. */
  VkMemoryBarrier barrier = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                             .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                             .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                              VK_ACCESS_HOST_READ_BIT};
  vk->vkCmdPipelineBarrier(vk->commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, NULL,
                           0, NULL);
  return IRP_OK;
}

/* --- creation ---------------------------------------------------------------------------------- */

static const irp_hal_device_vtable_t irp_vk_vtable = {
    .prepare_executable = irp_vk_prepare_executable,
    .release_executable = irp_vk_release_executable,
    .dispatch = irp_vk_dispatch,
    .executable_arch = "spirv",
    .allocate_buffer = irp_vk_allocate_buffer,
    .free_buffer = irp_vk_free_buffer,
    .register_constants = irp_vk_register_constants,
    .unregister_constants = irp_vk_unregister_constants,
    .synchronize = irp_vk_synchronize,
};

static int irp_vk_has_push_descriptor(irp_vk_device_t* vk, VkPhysicalDevice physical) {
  uint32_t count = 0;
  if (vk->vkEnumerateDeviceExtensionProperties(physical, NULL, &count, NULL) != VK_SUCCESS) return 0;
  VkExtensionProperties extensions[512];
  if (count > 512) count = 512;
  if (vk->vkEnumerateDeviceExtensionProperties(physical, NULL, &count, extensions) < 0) return 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (strcmp(extensions[i].extensionName, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME) == 0) return 1;
  }
  return 0;
}

/* Whether $IRP_VULKAN_DISABLE_FEATURES (comma-separated feature names) names `feature_name`: the
 * driver then treats the device as lacking it (how the tests meet a device without a feature). */
static int irp_vk_feature_disabled(const char* feature_name) {
  const char* list = getenv("IRP_VULKAN_DISABLE_FEATURES");
  size_t length = strlen(feature_name);
  for (const char* at = list; at != NULL && *at != '\0';) {
    const char* comma = strchr(at, ',');
    size_t item = comma != NULL ? (size_t)(comma - at) : strlen(at);
    if (item == length && strncmp(at, feature_name, length) == 0) return 1;
    at = comma != NULL ? comma + 1 : NULL;
  }
  return 0;
}

/* The optional features (irp_vk_feature_t) the device has; the 8/16-bit storage features are
 * Vulkan 1.1/1.2 structures, read only from a device of that version. */
static uint32_t irp_vk_query_features(irp_vk_device_t* vk, VkPhysicalDevice physical) {
  VkPhysicalDeviceVulkan12Features v12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan11Features v11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                          .pNext = &v12};
  VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceProperties properties;
  vk->vkGetPhysicalDeviceProperties(physical, &properties);
  int has_12 = VK_API_VERSION_MINOR(properties.apiVersion) >= 2 || VK_API_VERSION_MAJOR(properties.apiVersion) > 1;
  if (has_12) features.pNext = &v11;
  vk->vkGetPhysicalDeviceFeatures2(physical, &features);
  uint32_t found = 0;
  if (features.features.shaderInt64) found |= IRP_VK_FEATURE_INT64;
  if (features.features.shaderFloat64) found |= IRP_VK_FEATURE_FLOAT64;
  if (has_12 && v12.storageBuffer8BitAccess) found |= IRP_VK_FEATURE_STORAGE_8BIT;
  if (has_12 && v11.storageBuffer16BitAccess) found |= IRP_VK_FEATURE_STORAGE_16BIT;
  for (size_t i = 0; i < IRP_VK_FEATURE_COUNT; ++i) {
    if (irp_vk_feature_disabled(irp_vk_features[i].feature_name)) found &= ~irp_vk_features[i].feature;
  }
  return found;
}

/* The first physical device with a compute queue and push descriptors. */
static irp_status_t irp_vk_pick_device(irp_vk_device_t* vk, irp_diag_t* diag) {
  VkPhysicalDevice devices[16];
  uint32_t count = 16;
  VkResult result = vk->vkEnumeratePhysicalDevices(vk->instance, &count, devices);
  if (result < 0 || count == 0) {
    return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: no Vulkan device (the loader found no physical device%s)",
                    result < 0 ? ": vkEnumeratePhysicalDevices failed" : "");
  }
  for (uint32_t d = 0; d < count; ++d) {
    VkQueueFamilyProperties families[16];
    uint32_t family_count = 16;
    vk->vkGetPhysicalDeviceQueueFamilyProperties(devices[d], &family_count, families);
    for (uint32_t f = 0; f < family_count; ++f) {
      if (!(families[f].queueFlags & VK_QUEUE_COMPUTE_BIT) || !irp_vk_has_push_descriptor(vk, devices[d])) continue;
      VkPhysicalDeviceProperties properties;
      vk->vkGetPhysicalDeviceProperties(devices[d], &properties);
      vk->physical = devices[d];
      vk->queue_family = f;
      uint32_t bits = families[f].timestampValidBits;
      vk->timestamp_mask = bits == 0 ? 0 : bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
      vk->limits = properties.limits;
      vk->api_version = properties.apiVersion;
      vk->vkGetPhysicalDeviceMemoryProperties(devices[d], &vk->memory_properties);
      vk->features = irp_vk_query_features(vk, devices[d]);
      return IRP_OK;
    }
  }
  return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: no Vulkan device with a compute queue and %s",
                  VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
}

static irp_status_t irp_vk_open(irp_vk_device_t* vk, irp_diag_t* diag) {
  const char* library = getenv("IRP_VULKAN_LIBRARY");
  if (library == NULL || library[0] == '\0') library = IRP_VULKAN_LIBRARY;
  vk->library = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (vk->library == NULL) {
    return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: the Vulkan loader %s could not be opened (%s): install "
                    "libvulkan1 and a Vulkan driver (mesa-vulkan-drivers)", library, dlerror());
  }
  *(void**)&vk->vkGetInstanceProcAddr = dlsym(vk->library, "vkGetInstanceProcAddr");
  if (vk->vkGetInstanceProcAddr == NULL) {
    return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: %s has no vkGetInstanceProcAddr", library);
  }
  PFN_vkCreateInstance create_instance = (PFN_vkCreateInstance)vk->vkGetInstanceProcAddr(NULL, "vkCreateInstance");
  if (create_instance == NULL) return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: %s has no vkCreateInstance", library);
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "iree-py",
                           .pEngineName = "iree-py", .apiVersion = VK_API_VERSION_1_2};
  VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
  VkResult result = create_instance(&info, NULL, &vk->instance);
  if (result != VK_SUCCESS) {
    vk->instance = VK_NULL_HANDLE;
    return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: no Vulkan device (vkCreateInstance: %s)",
                    irp_vk_result_name(result));
  }
#define IRP_VK_LOAD_INSTANCE_(name)                                                                      \
  *(void**)&vk->name = (void*)vk->vkGetInstanceProcAddr(vk->instance, #name);                              \
  if (vk->name == NULL) return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: the loader has no %s", #name);
  IRP_VK_INSTANCE_FUNCTIONS(IRP_VK_LOAD_INSTANCE_)
#undef IRP_VK_LOAD_INSTANCE_
  return IRP_OK;
}

static irp_status_t irp_vk_create_logical(irp_vk_device_t* vk, irp_diag_t* diag) {
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = vk->queue_family, .queueCount = 1,
                                   .pQueuePriorities = &priority};
  const char* extensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
  /* The optional features the device has are enabled, so any shader irp_vk_check_capability lets
   * through may use them. */
  VkPhysicalDeviceVulkan12Features v12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                          .storageBuffer8BitAccess = (vk->features & IRP_VK_FEATURE_STORAGE_8BIT) != 0};
  VkPhysicalDeviceVulkan11Features v11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                          .pNext = &v12,
                                          .storageBuffer16BitAccess = (vk->features & IRP_VK_FEATURE_STORAGE_16BIT) != 0};
  VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                        .features = {.shaderInt64 = (vk->features & IRP_VK_FEATURE_INT64) != 0,
                                                     .shaderFloat64 = (vk->features & IRP_VK_FEATURE_FLOAT64) != 0}};
  int has_12 = VK_API_VERSION_MINOR(vk->api_version) >= 2 || VK_API_VERSION_MAJOR(vk->api_version) > 1;
  if (has_12) features.pNext = &v11;
  VkDeviceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &features,
                             .queueCreateInfoCount = 1, .pQueueCreateInfos = &queue, .enabledExtensionCount = 1,
                             .ppEnabledExtensionNames = extensions};
  IRP_VK_CHECK(diag, vk->vkCreateDevice(vk->physical, &info, NULL, &vk->device), "vkCreateDevice");
#define IRP_VK_LOAD_DEVICE_(name)                                                                        \
  *(void**)&vk->name = (void*)vk->vkGetDeviceProcAddr(vk->device, #name);                                  \
  if (vk->name == NULL) return IRP_FAIL(diag, IRP_UNSUPPORTED, "vulkan: the device has no %s", #name);
  IRP_VK_DEVICE_FUNCTIONS(IRP_VK_LOAD_DEVICE_)
#undef IRP_VK_LOAD_DEVICE_
  vk->vkGetDeviceQueue(vk->device, vk->queue_family, 0, &vk->queue);
  VkCommandPoolCreateInfo pool = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = vk->queue_family};
  IRP_VK_CHECK(diag, vk->vkCreateCommandPool(vk->device, &pool, NULL, &vk->command_pool), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo commands = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                          .commandPool = vk->command_pool,
                                          .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
  IRP_VK_CHECK(diag, vk->vkAllocateCommandBuffers(vk->device, &commands, &vk->commands), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  IRP_VK_CHECK(diag, vk->vkCreateFence(vk->device, &fence, NULL, &vk->fence), "vkCreateFence");
  if (vk->timestamp_mask != 0 && vk->limits.timestampPeriod > 0.0f) { /* else profiles have no device times */
    VkQueryPoolCreateInfo queries = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                     .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 2 * IRP_VK_MAX_TIMED};
    IRP_VK_CHECK(diag, vk->vkCreateQueryPool(vk->device, &queries, NULL, &vk->timestamps), "vkCreateQueryPool");
  }
  return irp_vk_range_create(vk, 1u << 16, &vk->staging, diag);
}

irp_status_t irp_hal_vulkan_device_create(const irp_allocator_t* allocator, irp_diag_t* diag,
                                          irp_hal_device_t** out_device) {
  *out_device = NULL;
  irp_vk_device_t* vk = NULL;
  IRP_RETURN_IF_ERROR(irp_allocate_zeroed(allocator, 1, sizeof(irp_vk_device_t), 16, diag, (void**)&vk));
  vk->base.vtable = &irp_vk_vtable;
  vk->allocator = *allocator;
  irp_status_t status = irp_vk_open(vk, diag);
  if (status == IRP_OK) status = irp_vk_pick_device(vk, diag);
  if (status == IRP_OK) status = irp_vk_create_logical(vk, diag);
  if (status != IRP_OK) {
    irp_hal_vulkan_device_release(&vk->base);
    return status;
  }
  *out_device = &vk->base;
  return IRP_OK;
}

void irp_hal_vulkan_device_release(irp_hal_device_t* device) {
  if (device == NULL) return;
  irp_vk_device_t* vk = (irp_vk_device_t*)device;
  if (vk->device != VK_NULL_HANDLE) {
    vk->vkDeviceWaitIdle(vk->device);
    for (int i = 0; i < IRP_VK_MAX_RANGES; ++i) {
      if (vk->ranges[i].buffer != VK_NULL_HANDLE) irp_vk_range_release(vk, &vk->ranges[i]);
    }
    if (vk->staging.buffer != VK_NULL_HANDLE) irp_vk_range_release(vk, &vk->staging);
    if (vk->fence != VK_NULL_HANDLE) vk->vkDestroyFence(vk->device, vk->fence, NULL);
    if (vk->timestamps != VK_NULL_HANDLE) vk->vkDestroyQueryPool(vk->device, vk->timestamps, NULL);
    if (vk->command_pool != VK_NULL_HANDLE) vk->vkDestroyCommandPool(vk->device, vk->command_pool, NULL);
    vk->vkDestroyDevice(vk->device, NULL);
  }
  if (vk->instance != VK_NULL_HANDLE && vk->vkDestroyInstance != NULL) vk->vkDestroyInstance(vk->instance, NULL);
  /* The library stays loaded (no dlclose): Vulkan drivers (lavapipe's LLVM) do not unload cleanly, and
   * the next dlopen of it in this process is then only a reference count. */
  irp_allocator_t allocator = vk->allocator;
  irp_free(&allocator, vk);
}
