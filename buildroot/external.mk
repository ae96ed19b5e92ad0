include $(sort $(wildcard $(BR2_EXTERNAL_LATSCOPE_PATH)/package/*/*.mk))
